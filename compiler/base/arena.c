/* arena.c - the bump allocator that owns every byte of a model (see ir.h).
 *
 * Small requests are carved from 1 MiB chunks; a request larger than a quarter chunk
 * gets a chunk of its own, so weight tensors do not waste space. Chunks form a list
 * freed at once by oqc_arena_free. */
#include "base.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_SIZE ((size_t)1 << 20)

typedef struct Chunk {
    struct Chunk *next;   /* previously allocated chunk */
    int own;              /* 1: a chunk of its own for one large request */
    size_t size;          /* usable bytes after the header */
    size_t used;          /* bytes handed out */
    _Alignas(64) unsigned char mem[];  /* the storage */
} Chunk;

struct OqcArena {
    Chunk *head;          /* chunk small requests come from (most recent) */
    size_t total;         /* bytes handed out over the arena's life */
};

static Chunk *chunk_new(size_t size) {
    Chunk *c = NULL;
    if (size > SIZE_MAX - sizeof(Chunk) - 64 ||
        posix_memalign((void **)&c, 64, sizeof(Chunk) + size) != 0 || !c) {
        char msg[96];
        snprintf(msg, sizeof msg, "out of memory allocating %zu bytes", size);
        oqc_panic(__FILE__, __LINE__, msg);
    }
    c->next = NULL;
    c->own = 0;
    c->size = size;
    c->used = 0;
    return c;
}

OqcArena *oqc_arena_new(void) {
    OqcArena *a = calloc(1, sizeof *a);
    if (!a)
        oqc_panic(__FILE__, __LINE__, "out of memory creating an arena");
    return a;
}

void oqc_arena_free(OqcArena *a) {
    if (!a)
        return;
    for (Chunk *c = a->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(a);
}

static void *arena_take(OqcArena *a, size_t n, size_t align) {
    if (n == 0)
        n = 1;
    if (n > CHUNK_SIZE / 4) {
        /* Own chunk, linked behind the head so the head keeps serving small requests. */
        Chunk *c = chunk_new(n);
        c->used = n;
        c->own = 1;
        if (a->head) {
            c->next = a->head->next;
            a->head->next = c;
        } else {
            a->head = c;
        }
        a->total += n;
        return c->mem;
    }
    Chunk *h = a->head;
    size_t off = h ? (h->used + align - 1) & ~(align - 1) : 0;
    if (!h || off + n > h->size) {
        h = chunk_new(CHUNK_SIZE);
        h->next = a->head;
        a->head = h;
        off = 0;
    }
    h->used = off + n;
    a->total += n;
    return h->mem + off;
}

void *oqc_arena_alloc(OqcArena *a, size_t n) {
    void *p = arena_take(a, n, 16);
    memset(p, 0, n);
    return p;
}

void *oqc_arena_alloc_raw(OqcArena *a, size_t n) { return arena_take(a, n, 64); }

void *oqc_arena_dup(OqcArena *a, const void *p, size_t n) {
    void *q = arena_take(a, n, 16);
    if (n)
        memcpy(q, p, n);
    return q;
}

char *oqc_arena_strndup(OqcArena *a, const char *s, size_t n) {
    char *q = arena_take(a, n + 1, 1);
    if (n)
        memcpy(q, s, n);
    q[n] = 0;
    return q;
}

char *oqc_arena_strdup(OqcArena *a, const char *s) {
    return oqc_arena_strndup(a, s ? s : "", s ? strlen(s) : 0);
}

char *oqc_arena_printf(OqcArena *a, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    OQC_ASSERT(n >= 0);
    char *s = arena_take(a, (size_t)n + 1, 1);
    vsnprintf(s, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    return s;
}

/* A grown array's old storage is dead, and when it had a chunk of its own that chunk is
 * freed: an array doubled up to N elements would otherwise leave N more behind (a
 * 100k-node graph's node and tensor arrays: 40 MB). Small arrays stay where they are. */
void *oqc_arena_grow(OqcArena *a, void *p, size_t old_n, size_t new_n, size_t el) {
    OQC_ASSERT(new_n >= old_n && (el == 0 || new_n <= SIZE_MAX / el));
    void *q = oqc_arena_alloc(a, new_n * el);
    if (old_n)
        memcpy(q, p, old_n * el);
    if (p && old_n * el > CHUNK_SIZE / 4)
        for (Chunk **link = &a->head; *link; link = &(*link)->next)
            if ((*link)->own && (void *)(*link)->mem == p) {
                Chunk *dead = *link;
                *link = dead->next;
                free(dead);
                break;
            }
    return q;
}

size_t oqc_arena_used(const OqcArena *a) { return a->total; }
