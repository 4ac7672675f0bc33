/* SIGBUS from a regular file that shrank under its mapping (a dataset file truncated while a
   reader had it mapped). argv[1]: the file to create. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FILE_BYTES (64 << 10)

static long read_records(const volatile char *base, size_t bytes) {
    long sum = 0;
    for (size_t off = 0; off < bytes; off += 4096)
        sum += base[off];
    return sum;
}

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    int fd = open(argv[1], O_CREAT | O_RDWR | O_TRUNC, 0600);
    char page[4096];
    memset(page, 7, sizeof page);
    for (int i = 0; i < FILE_BYTES / 4096; i++)
        if (write(fd, page, sizeof page) != sizeof page) return 2;
    char *base = mmap(NULL, FILE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) { perror("mmap"); return 2; }
    if (ftruncate(fd, 0) != 0) return 2;
    printf("%ld\n", read_records(base, FILE_BYTES));
    return 0;
}
