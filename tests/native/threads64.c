/* A process with 64 worker threads, all parked, then SIGSEGV in the main thread. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#define WORKERS 64

static pthread_barrier_t ready;

static void *worker(void *arg) {
    (void)arg;
    pthread_barrier_wait(&ready);
    for (;;) pause();
    return NULL;
}

static void __attribute__((noinline)) fail_after_start(volatile int *p) { *p = 42; }

int main(void) {
    pthread_t tids[WORKERS];
    pthread_barrier_init(&ready, NULL, WORKERS + 1);
    for (int i = 0; i < WORKERS; i++)
        if (pthread_create(&tids[i], NULL, worker, NULL) != 0) return 2;
    pthread_barrier_wait(&ready);
    fail_after_start(NULL);
    return 0;
}
