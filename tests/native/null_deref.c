/* SIGSEGV: a null pointer dereferenced in crash_here(). */
#include <stdio.h>

struct batch { int size; };

static int __attribute__((noinline)) crash_here(struct batch *b) { return b->size * 2; }

int main(int argc, char **argv) {
    struct batch *b = argc > 5 ? (struct batch *)argv : NULL;
    printf("%d\n", crash_here(b));
    return 0;
}
