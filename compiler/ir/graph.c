/* graph.c - the IR: op table, tensors and nodes, linking, topological order,
 * attribute getters and shape helpers (see ir.h).
 *
 * Tensors and nodes are flat arrays addressed by id; names map to tensor ids through
 * an open-addressing hash table kept in the graph's arena. Producer and consumer lists
 * are derived data, recomputed by oqc_graph_link after any edit. */
#include "ir.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ op table */

static const char *const op_names[OQC_OP_COUNT] = {
    [OQC_OP_UNKNOWN] = "<unknown>",
#define OQC_OP(name, flags) [OQC_OP_##name] = #name,
#include "ops.def"
#undef OQC_OP
};

static const unsigned op_flags[OQC_OP_COUNT] = {
#define OQC_OP(name, flags) [OQC_OP_##name] = (flags),
#include "ops.def"
#undef OQC_OP
};

/* Every enum value has a name: the table length equals the enum count. */
_Static_assert(sizeof op_names / sizeof op_names[0] == OQC_OP_COUNT,
               "op_names must cover every OqcOp");

const char *oqc_op_name(OqcOp op) {
    return (unsigned)op < OQC_OP_COUNT ? op_names[op] : "<bad op>";
}

unsigned oqc_op_flags(OqcOp op) { return (unsigned)op < OQC_OP_COUNT ? op_flags[op] : 0; }

OqcOp oqc_op_lookup(const char *domain, const char *op_type) {
    if (domain && domain[0] && strcmp(domain, "ai.onnx") != 0)
        return OQC_OP_UNKNOWN;
    /* The table is sorted (ops.def is alphabetical): binary search. */
    int lo = 1, hi = OQC_OP_COUNT - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        int c = strcmp(op_type, op_names[mid]);
        if (c == 0)
            return (OqcOp)mid;
        if (c < 0)
            hi = mid - 1;
        else
            lo = mid + 1;
    }
    return OQC_OP_UNKNOWN;
}

typedef struct AttrSpec {
    OqcOp op;            /* operator */
    const char *name;    /* attribute name */
    OqcAttrType type;    /* required type */
} AttrSpec;

static const AttrSpec attr_specs[] = {
#define OQC_ATTR(op, name, type) { OQC_OP_##op, #name, OQC_ATTR_##type },
#include "attrs.def"
#undef OQC_ATTR
};

OqcAttrType oqc_attr_expected(OqcOp op, const char *name) {
    for (size_t i = 0; i < sizeof attr_specs / sizeof attr_specs[0]; i++)
        if (attr_specs[i].op == op && strcmp(attr_specs[i].name, name) == 0)
            return attr_specs[i].type;
    return OQC_ATTR_UNDEFINED;
}

const char *oqc_attr_type_name(OqcAttrType t) {
    static const char *const names[] = {
        "UNDEFINED", "FLOAT", "INT", "STRING", "TENSOR", "GRAPH", "FLOATS", "INTS",
        "STRINGS", "TENSORS", "GRAPHS", "SPARSE_TENSOR", "SPARSE_TENSORS", "TYPE_PROTO",
        "TYPE_PROTOS",
    };
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "INVALID";
}

/* ------------------------------------------------------------- name hash map */

struct OqcNameMap {
    size_t cap;     /* slots (power of two) */
    size_t count;   /* used slots */
    int *ids;       /* tensor id per slot, -1 when empty */
};

static uint64_t hash_str(const char *s) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void map_rehash(OqcGraph *g, size_t cap) {
    OqcNameMap *m = g->names;
    int *ids = oqc_arena_alloc_raw(g->arena, cap * sizeof *ids);
    memset(ids, 0xff, cap * sizeof *ids);
    for (size_t i = 0; i < m->cap; i++) {
        int id = m->ids[i];
        if (id < 0)
            continue;
        size_t h = hash_str(g->tensors[id].name) & (cap - 1);
        while (ids[h] >= 0)
            h = (h + 1) & (cap - 1);
        ids[h] = id;
    }
    m->ids = ids;
    m->cap = cap;
}

void oqc_tensor_rename(OqcGraph *g, int t, const char *name) {
    OQC_ASSERT(oqc_tensor_find(g, name) < 0);
    g->tensors[t].name = oqc_arena_strdup(g->arena, name);
    map_rehash(g, g->names->cap);   /* rehashes every id under its current name */
}

int oqc_tensor_find(const OqcGraph *g, const char *name) {
    const OqcNameMap *m = g->names;
    size_t h = hash_str(name) & (m->cap - 1);
    for (; m->ids[h] >= 0; h = (h + 1) & (m->cap - 1))
        if (strcmp(g->tensors[m->ids[h]].name, name) == 0)
            return m->ids[h];
    return -1;
}

int oqc_tensor_add(OqcGraph *g, const char *name) {
    OQC_ASSERT(oqc_tensor_find(g, name) < 0);
    if (g->ntensors == g->cap_tensors) {
        int cap = g->cap_tensors ? 2 * g->cap_tensors : 64;
        g->tensors = oqc_arena_grow(g->arena, g->tensors, (size_t)g->ntensors, (size_t)cap,
                                    sizeof *g->tensors);
        g->cap_tensors = cap;
    }
    int id = g->ntensors++;
    OqcTensor *t = &g->tensors[id];
    memset(t, 0, sizeof *t);
    t->name = oqc_arena_strdup(g->arena, name);
    t->shape.rank = -1;
    t->producer = -1;
    t->view_base = -1;
    OqcNameMap *m = g->names;
    if (2 * (m->count + 1) > m->cap)
        map_rehash(g, 2 * m->cap);
    size_t h = hash_str(name) & (m->cap - 1);
    while (m->ids[h] >= 0)
        h = (h + 1) & (m->cap - 1);
    m->ids[h] = id;
    m->count++;
    return id;
}

int oqc_tensor_get(OqcGraph *g, const char *name) {
    int id = oqc_tensor_find(g, name);
    return id >= 0 ? id : oqc_tensor_add(g, name);
}

/* ---------------------------------------------------------------- the graph */

OqcGraph *oqc_graph_new(const char *path) {
    OqcArena *a = oqc_arena_new();
    OqcGraph *g = oqc_arena_alloc(a, sizeof *g);
    g->arena = a;
    g->path = oqc_arena_strdup(a, path ? path : "<memory>");
    g->name = "";
    g->producer = "";
    g->names = oqc_arena_alloc(a, sizeof *g->names);
    g->names->cap = 0;
    g->names->ids = NULL;
    map_rehash(g, 64);
    return g;
}

void oqc_graph_free(OqcGraph *g) {
    if (g)
        oqc_arena_free(g->arena);
}

int oqc_node_add(OqcGraph *g, OqcOp op, const char *op_type, const char *name, int nin,
                 const int *in, int nout, const int *out) {
    if (g->nnodes == g->cap_nodes) {
        int cap = g->cap_nodes ? 2 * g->cap_nodes : 64;
        g->nodes = oqc_arena_grow(g->arena, g->nodes, (size_t)g->nnodes, (size_t)cap,
                                  sizeof *g->nodes);
        g->cap_nodes = cap;
    }
    int id = g->nnodes++;
    OqcNode *n = &g->nodes[id];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->op_type = op_type ? op_type : oqc_op_name(op);
    n->domain = "";
    n->name = name ? name : oqc_arena_printf(g->arena, "%s_%d", n->op_type, id);
    n->nin = nin;
    n->in = oqc_arena_dup(g->arena, in, (size_t)nin * sizeof *in);
    n->nout = nout;
    n->out = oqc_arena_dup(g->arena, out, (size_t)nout * sizeof *out);
    return id;
}

int oqc_graph_link(OqcGraph *g, OqcDiag *d) {
    int rc = 0;
    for (int t = 0; t < g->ntensors; t++) {
        g->tensors[t].producer = -1;
        g->tensors[t].nconsumers = 0;
    }
    for (int i = 0; i < g->nnodes; i++) {
        OqcNode *n = &g->nodes[i];
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0)
                g->tensors[n->in[k]].nconsumers++;
        for (int k = 0; k < n->nout; k++) {
            int t = n->out[k];
            if (t < 0)
                continue;
            OqcTensor *tt = &g->tensors[t];
            if (tt->producer >= 0) {
                rc = oqc_err_node(d, g, i, "output '%s' is also produced by node '%s'",
                                  tt->name, g->nodes[tt->producer].name);
            } else if (tt->is_input || tt->is_const) {
                rc = oqc_err_node(d, g, i, "output '%s' is already a graph input or constant",
                                  tt->name);
            }
            tt->producer = i;
        }
    }
    /* One consumer array for the whole graph, sliced per tensor. */
    int total = 0;
    for (int t = 0; t < g->ntensors; t++)
        total += g->tensors[t].nconsumers;
    int *pool = oqc_arena_alloc(g->arena, (size_t)(total ? total : 1) * sizeof *pool);
    for (int t = 0; t < g->ntensors; t++) {
        g->tensors[t].consumers = pool;
        pool += g->tensors[t].nconsumers;
        g->tensors[t].nconsumers = 0;
    }
    for (int i = 0; i < g->nnodes; i++) {
        OqcNode *n = &g->nodes[i];
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0) {
                OqcTensor *tt = &g->tensors[n->in[k]];
                tt->consumers[tt->nconsumers++] = i;
            }
    }
    return rc;
}

int oqc_graph_toposort(OqcGraph *g, OqcDiag *d) {
    if (oqc_graph_link(g, d) < 0)
        return -1;
    int n = g->nnodes;
    if (n == 0)
        return 0;
    /* Kahn's algorithm; the ready set is a min-heap on the original index, so a graph
     * already in topological order keeps its order exactly. */
    /* (scratch arrays on the heap, not the graph's arena: the pipeline sorts the graph
     * after every pass, and a large graph would keep every pass's copies) */
    int *indeg = calloc((size_t)n, sizeof *indeg);
    int *heap = malloc((size_t)n * sizeof *heap);
    int *order = malloc((size_t)n * sizeof *order);
    int nheap = 0, norder = 0;
    /* A tensor written through views (a Concat replaced by in-place writes) depends on
     * the producers of its views: count them as writers of the base. */
    int *view_writers = calloc((size_t)g->ntensors + 1, sizeof *view_writers);
    if (!indeg || !heap || !order || !view_writers)
        oqc_panic(__FILE__, __LINE__, "out of memory sorting the graph");
    for (int t = 0; t < g->ntensors; t++) {
        const OqcTensor *tt = &g->tensors[t];
        if (tt->view_base >= 0 && tt->producer >= 0)
            view_writers[tt->view_base]++;
    }
    for (int i = 0; i < n; i++) {
        const OqcNode *nd = &g->nodes[i];
        for (int k = 0; k < nd->nin; k++)
            if (nd->in[k] >= 0)
                indeg[i] += (g->tensors[nd->in[k]].producer >= 0) + view_writers[nd->in[k]];
    }
#define HEAP_PUSH(v)                                                                   \
    do {                                                                               \
        int c_ = nheap++;                                                              \
        heap[c_] = (v);                                                                \
        while (c_ > 0 && heap[(c_ - 1) / 2] > heap[c_]) {                              \
            int p_ = (c_ - 1) / 2, t_ = heap[p_];                                      \
            heap[p_] = heap[c_];                                                       \
            heap[c_] = t_;                                                             \
            c_ = p_;                                                                   \
        }                                                                              \
    } while (0)
    for (int i = 0; i < n; i++)
        if (indeg[i] == 0)
            HEAP_PUSH(i);
    while (nheap > 0) {
        int v = heap[0];
        heap[0] = heap[--nheap];
        for (int c = 0;;) {
            int l = 2 * c + 1, r = l + 1, m = c;
            if (l < nheap && heap[l] < heap[m])
                m = l;
            if (r < nheap && heap[r] < heap[m])
                m = r;
            if (m == c)
                break;
            int t = heap[m];
            heap[m] = heap[c];
            heap[c] = t;
            c = m;
        }
        order[norder++] = v;
        const OqcNode *nd = &g->nodes[v];
        for (int k = 0; k < nd->nout; k++) {
            if (nd->out[k] < 0)
                continue;
            const OqcTensor *t = &g->tensors[nd->out[k]];
            for (int c = 0; c < t->nconsumers; c++)
                if (--indeg[t->consumers[c]] == 0)
                    HEAP_PUSH(t->consumers[c]);
            if (t->view_base >= 0) {
                const OqcTensor *b = &g->tensors[t->view_base];
                for (int c = 0; c < b->nconsumers; c++)
                    if (--indeg[b->consumers[c]] == 0)
                        HEAP_PUSH(b->consumers[c]);
            }
        }
    }
#undef HEAP_PUSH
    if (norder < n) {
        char list[512] = "";
        size_t len = 0;
        int shown = 0;
        for (int i = 0; i < n && shown < 8; i++) {
            if (indeg[i] == 0)
                continue;
            int w = snprintf(list + len, sizeof list - len, "%s'%s'", shown ? ", " : "",
                             g->nodes[i].name);
            if (w < 0 || (size_t)w >= sizeof list - len)
                break;
            len += (size_t)w;
            shown++;
        }
        free(indeg);
        free(heap);
        free(order);
        free(view_writers);
        return oqc_err(d, "%s: the graph has a cycle: %d node(s) depend on each other "
                          "(among them %s)", g->path, n - norder, list);
    }
    int moved = 0;
    for (int i = 0; i < n && !moved; i++)
        moved = order[i] != i;
    if (moved) { /* reordered in place through a temporary copy */
        OqcNode *sorted = malloc((size_t)n * sizeof *sorted);
        if (!sorted)
            oqc_panic(__FILE__, __LINE__, "out of memory sorting the graph");
        for (int i = 0; i < n; i++)
            sorted[i] = g->nodes[order[i]];
        memcpy(g->nodes, sorted, (size_t)n * sizeof *sorted);
        free(sorted);
    }
    free(indeg);
    free(heap);
    free(order);
    free(view_writers);
    return moved ? oqc_graph_link(g, d) : 0;
}

int oqc_bind_input(OqcGraph *g, int tensor, const OqcValue *v, OqcDiag *d) {
    OqcTensor *t = &g->tensors[tensor];
    char a[128], b[128];
    if (!t->is_input)
        return oqc_err(d, "%s: '%s' is not a graph input", g->path, t->name);
    if (t->dtype != v->dtype)
        return oqc_err(d, "%s: input '%s' is %s but the value is %s", g->path, t->name,
                       oqc_dtype_name(t->dtype), oqc_dtype_name(v->dtype));
    if (t->shape.rank >= 0) {
        int ok = t->shape.rank == v->shape.rank;
        for (int i = 0; ok && i < t->shape.rank; i++)
            ok = t->shape.d[i] < 0 || t->shape.d[i] == v->shape.d[i];
        if (!ok)
            return oqc_err(d, "%s: input '%s' has shape %s; the value has shape %s", g->path,
                           t->name, oqc_shape_str(&t->shape, a, sizeof a),
                           oqc_shape_str(&v->shape, b, sizeof b));
    }
    t->is_input = 0;
    t->is_const = 1;
    t->shape = v->shape;
    t->data = oqc_arena_dup(g->arena, v->data, v->nbytes);
    t->nbytes = v->nbytes;
    int j = 0;
    for (int i = 0; i < g->ninputs; i++)
        if (g->inputs[i] != tensor)
            g->inputs[j++] = g->inputs[i];
    g->ninputs = j;
    return 0;
}

void oqc_graph_drop_nodes(OqcGraph *g, const unsigned char *dead) {
    int j = 0;
    for (int i = 0; i < g->nnodes; i++)
        if (!dead[i])
            g->nodes[j++] = g->nodes[i];
    g->nnodes = j;
}

void oqc_graph_remove_nodes(OqcGraph *g, const unsigned char *dead) {
    oqc_graph_drop_nodes(g, dead);
    OqcDiag d;
    oqc_diag_init(&d);
    int rc = oqc_graph_link(g, &d);
    oqc_diag_free(&d);
    OQC_ASSERT(rc == 0);
}

/* --------------------------------------------------------------- attributes */

const OqcAttr *oqc_attr_find(const OqcNode *n, const char *name) {
    for (int i = 0; i < n->nattr; i++)
        if (strcmp(n->attr[i].name, name) == 0)
            return &n->attr[i];
    return NULL;
}

int64_t oqc_attr_int(const OqcNode *n, const char *name, int64_t dflt) {
    const OqcAttr *a = oqc_attr_find(n, name);
    return a && a->type == OQC_ATTR_INT ? a->i : dflt;
}

float oqc_attr_float(const OqcNode *n, const char *name, float dflt) {
    const OqcAttr *a = oqc_attr_find(n, name);
    return a && a->type == OQC_ATTR_FLOAT ? a->f : dflt;
}

const char *oqc_attr_string(const OqcNode *n, const char *name, const char *dflt) {
    const OqcAttr *a = oqc_attr_find(n, name);
    return a && a->type == OQC_ATTR_STRING ? a->s : dflt;
}

int oqc_attr_ints(const OqcNode *n, const char *name, const int64_t **v) {
    const OqcAttr *a = oqc_attr_find(n, name);
    if (!a || a->type != OQC_ATTR_INTS)
        return -1;
    *v = a->ints;
    return a->n;
}

/* ------------------------------------------------------------ work of a node */

int64_t oqc_node_macs(const OqcGraph *g, int node) {
    const OqcNode *n = &g->nodes[node];
    const OqcTensor *y = &g->tensors[n->out[0]];
    if (n->op == OQC_OP_Conv && n->nin > 1) {
        const OqcShape *w = &g->tensors[n->in[1]].shape;
        int64_t out = 0;
        if (w->rank < 1 || w->d[0] <= 0)
            return 0;
        for (int k = 0; k < n->nout; k++)
            out += oqc_shape_numel(&g->tensors[n->out[k]].shape);
        return out * (oqc_shape_numel(w) / w->d[0]);
    }
    if ((n->op == OQC_OP_Gemm || n->op == OQC_OP_MatMul) && n->nin > 1 && y->shape.rank >= 1) {
        const OqcShape *a = &g->tensors[n->in[0]].shape, *b = &g->tensors[n->in[1]].shape;
        int64_t cols = y->shape.d[y->shape.rank - 1];
        if (n->op == OQC_OP_MatMul)
            return a->rank >= 1 ? oqc_shape_numel(&y->shape) * a->d[a->rank - 1] : 0;
        return cols > 0 ? oqc_shape_numel(&y->shape) * (oqc_shape_numel(b) / cols) : 0;
    }
    return 0;
}

/* ------------------------------------------------------------ shapes, dtypes */

int64_t oqc_shape_numel(const OqcShape *s) {
    if (s->rank < 0)
        return -1;
    int64_t n = 1;
    for (int i = 0; i < s->rank; i++) {
        if (s->d[i] < 0)
            return -1;
        n = oqc_mul_sat(n, s->d[i]);   /* a 0 extent makes it 0 for good */
    }
    return n;
}

int oqc_shape_known(const OqcShape *s) { return oqc_shape_numel(s) >= 0; }

int oqc_shape_equal(const OqcShape *a, const OqcShape *b) {
    if (a->rank != b->rank)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->d[i] != b->d[i])
            return 0;
    return 1;
}

char *oqc_shape_str(const OqcShape *s, char *buf, size_t size) {
    if (s->rank < 0) {
        snprintf(buf, size, "?");
        return buf;
    }
    if (s->rank == 0) {
        snprintf(buf, size, "scalar");
        return buf;
    }
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < s->rank && len < size; i++) {
        int w = s->d[i] < 0 ? snprintf(buf + len, size - len, "%s?", i ? "x" : "")
                            : snprintf(buf + len, size - len, "%s%" PRId64, i ? "x" : "",
                                       s->d[i]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
    return buf;
}

static const char *const dtype_names[] = {
    [OQCF_UNDEFINED] = "undef", [OQCF_FLOAT] = "f32",     [OQCF_UINT8] = "u8",
    [OQCF_INT8] = "i8",         [OQCF_UINT16] = "u16",    [OQCF_INT16] = "i16",
    [OQCF_INT32] = "i32",       [OQCF_INT64] = "i64",     [OQCF_STRING] = "string",
    [OQCF_BOOL] = "bool",       [OQCF_FLOAT16] = "f16",   [OQCF_DOUBLE] = "f64",
    [OQCF_UINT32] = "u32",      [OQCF_UINT64] = "u64",    [OQCF_COMPLEX64] = "c64",
    [OQCF_COMPLEX128] = "c128", [OQCF_BFLOAT16] = "bf16",
};

const char *oqc_dtype_name(OqcfDType t) {
    return (unsigned)t < sizeof dtype_names / sizeof dtype_names[0] ? dtype_names[t]
                                                                     : "dtype?";
}

OqcfDType oqc_dtype_lookup(const char *name) {
    for (size_t i = 1; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
        if (strcmp(dtype_names[i], name) == 0)
            return (OqcfDType)i;
    return OQCF_UNDEFINED;
}

const char *oqc_node_label(const OqcGraph *g, int node) { return g->nodes[node].name; }

int oqc_err_node(OqcDiag *d, const OqcGraph *g, int node, const char *fmt, ...) {
    const OqcNode *n = &g->nodes[node];
    char prefix[512];
    snprintf(prefix, sizeof prefix, "%s: node '%s' (%s%s%s): ", g->path, n->name,
             n->domain[0] ? n->domain : "", n->domain[0] ? "." : "", n->op_type);
    va_list ap;
    va_start(ap, fmt);
    oqc_verr_prefixed(d, prefix, fmt, ap);
    va_end(ap);
    return -1;
}
