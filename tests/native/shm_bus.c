/* SIGBUS from /dev/shm: a segment bigger than the tmpfs, mapped and touched page by page.
   Run inside `unshare -m` with `mount -t tmpfs -o size=1m tmpfs /dev/shm` (what a container
   with a small /dev/shm does to a PyTorch DataLoader). The segment is named like PyTorch's. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#define SEGMENT_BYTES (8 << 20)

static void touch_pages(volatile char *base, size_t bytes) {
    for (size_t off = 0; off < bytes; off += 4096)
        base[off] = 1;
}

int main(void) {
    char name[64];
    snprintf(name, sizeof name, "/torch_%d_1234", (int)getpid());
    int fd = shm_open(name, O_CREAT | O_RDWR, 0600);
    if (fd < 0 || ftruncate(fd, SEGMENT_BYTES) != 0) { perror("shm"); return 2; }
    char *base = mmap(NULL, SEGMENT_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) { perror("mmap"); return 2; }
    touch_pages(base, SEGMENT_BYTES);
    return 0; /* not reached when /dev/shm is smaller than the segment */
}
