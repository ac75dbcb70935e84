/* onnx_load.c - the ONNX frontend: a .onnx file into the IR (see ir.h).
 *
 * Memory: a model is mostly initializer bytes, so the file is never held whole:
 * onnx_read.c walks the protobuf wire format through a buffer and unpacks each
 * GraphProto.initializer on its own with protobuf-c into the model's arena, the other
 * fields of ModelProto and GraphProto afterwards. protobuf-c's allocator is the arena,
 * and the IR points at the unpacked raw_data instead of copying it: peak memory is
 * about the size of the weights plus the largest single initializer.
 *
 * Validation here is structural: every reference resolves, dims are sane, data sizes
 * match, attributes have the types attrs.def expects, opset domains are imported, and
 * the graph is acyclic. Shapes are shape.c's job. */
#include "frontend.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx.pb-c.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "oqc reads ONNX raw_data in place and needs a little-endian host"
#endif

/* Loader state for one model file. */
typedef struct Loader {
    OqcOnnxCtx ctx;          /* arena, diag, path, dir for onnx_tensor.c */
    OqcGraph *g;             /* graph being built */
    OqcDiag *d;              /* where errors go */
    const char *path;        /* model file */
    const char *dir;         /* its directory, for external data */
    ProtobufCAllocator pb;   /* protobuf-c allocating from g->arena */
} Loader;

static void *pb_alloc(void *arena, size_t n) {
    return n >= 256 ? oqc_arena_alloc_raw(arena, n) : oqc_arena_alloc(arena, n);
}
static void pb_free(void *arena, void *p) { (void)arena; (void)p; }

/* ------------------------------------------------------------ graph pieces */

static int load_value_info(Loader *L, const Onnx__ValueInfoProto *vi, OqcTensor *t) {
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type) {
        /* Sequences, maps, optionals: kept so `dump` shows the graph; commands that
         * execute reject them (oqc_check_supported). */
        if (L->g->nnontensor++ == 0)
            L->g->nontensor = t->name;
        t->dtype = OQCF_UNDEFINED;
        t->shape.rank = -1;
        return 0;
    }
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    t->dtype = tt->has_elem_type ? (OqcfDType)tt->elem_type : OQCF_UNDEFINED;
    if (!tt->shape) {
        t->shape.rank = -1;
        return 0;
    }
    if (tt->shape->n_dim > OQC_MAX_RANK)
        return oqc_err(L->d, "%s: '%s' has rank %zu; oqc supports rank <= %d", L->path,
                       t->name, tt->shape->n_dim, OQC_MAX_RANK);
    t->shape.rank = (int)tt->shape->n_dim;
    t->dim_param = oqc_arena_alloc(L->g->arena, OQC_MAX_RANK * sizeof *t->dim_param);
    int64_t numel = 1;
    for (int i = 0; i < t->shape.rank; i++) {
        const Onnx__TensorShapeProto__Dimension *dm = tt->shape->dim[i];
        t->shape.d[i] = -1;
        if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE) {
            if (dm->dim_value < 0)
                return oqc_err(L->d, "%s: graph input '%s' has negative dimension %" PRId64
                                     " at axis %d", L->path, t->name, dm->dim_value, i);
            t->shape.d[i] = dm->dim_value;
            if (dm->dim_value && numel > OQC_MAX_ELEMENTS / dm->dim_value)
                numel = OQC_MAX_ELEMENTS + 1;
            else
                numel *= dm->dim_value;
        } else if (dm->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) {
            t->dim_param[i] = oqc_arena_strdup(L->g->arena, dm->dim_param);
        }
    }
    if (numel > OQC_MAX_ELEMENTS && oqc_shape_numel(&t->shape) != 0) {
        char buf[160];
        return oqc_err(L->d, "%s: graph input '%s' has shape %s, more than %" PRId64
                             " elements: absurd, refusing it", L->path, t->name,
                       oqc_shape_str(&t->shape, buf, sizeof buf), OQC_MAX_ELEMENTS);
    }
    return 0;
}

static const char *attr_summary(OqcArena *a, const Onnx__AttributeProto *ap, OqcAttrType t) {
    switch (t) {
    case OQC_ATTR_GRAPH:
        return oqc_arena_printf(a, "graph '%s' (%zu nodes)", ap->g && ap->g->name ? ap->g->name : "",
                                ap->g ? ap->g->n_node : 0);
    case OQC_ATTR_GRAPHS: return oqc_arena_printf(a, "%zu graphs", ap->n_graphs);
    case OQC_ATTR_SPARSE_TENSOR: return "sparse tensor";
    case OQC_ATTR_SPARSE_TENSORS:
        return oqc_arena_printf(a, "%zu sparse tensors", ap->n_sparse_tensors);
    case OQC_ATTR_TYPE_PROTO: return "type";
    case OQC_ATTR_TYPE_PROTOS: return oqc_arena_printf(a, "%zu types", ap->n_type_protos);
    default: return NULL;
    }
}

static int load_attr(Loader *L, int node, const Onnx__AttributeProto *ap, OqcAttr *at) {
    OqcArena *a = L->g->arena;
    OqcNode *n = &L->g->nodes[node];
    OqcAttrType t = ap->has_type ? (OqcAttrType)ap->type : OQC_ATTR_UNDEFINED;
    at->name = oqc_arena_strdup(a, ap->name);
    if (t == OQC_ATTR_UNDEFINED) { /* very old models: deduce from the field set */
        t = ap->has_f ? OQC_ATTR_FLOAT : ap->has_i ? OQC_ATTR_INT : ap->has_s ? OQC_ATTR_STRING
          : ap->t ? OQC_ATTR_TENSOR : ap->g ? OQC_ATTR_GRAPH : ap->n_floats ? OQC_ATTR_FLOATS
          : ap->n_ints ? OQC_ATTR_INTS : ap->n_strings ? OQC_ATTR_STRINGS
          : ap->n_tensors ? OQC_ATTR_TENSORS : ap->n_graphs ? OQC_ATTR_GRAPHS
          : OQC_ATTR_UNDEFINED;
        if (t == OQC_ATTR_UNDEFINED)
            return oqc_err_node(L->d, L->g, node, "attribute '%s' has no type and no value",
                                at->name);
    }
    if ((unsigned)t > OQC_ATTR_TYPE_PROTOS)
        return oqc_err_node(L->d, L->g, node, "attribute '%s' has invalid type %d", at->name,
                            (int)t);
    at->type = t;
    OqcAttrType want = oqc_attr_expected(n->op, at->name);
    if (want != OQC_ATTR_UNDEFINED && want != t)
        return oqc_err_node(L->d, L->g, node, "attribute '%s' must be %s, but the model "
                                              "gives %s", at->name, oqc_attr_type_name(want),
                            oqc_attr_type_name(t));
    switch (t) {
    case OQC_ATTR_FLOAT: at->f = ap->f; break;
    case OQC_ATTR_INT: at->i = ap->i; break;
    case OQC_ATTR_STRING:
        at->s = oqc_arena_strndup(a, (const char *)ap->s.data, ap->s.len);
        at->slen = ap->s.len;
        break;
    case OQC_ATTR_FLOATS:
        at->n = (int)ap->n_floats;
        at->floats = ap->floats;
        break;
    case OQC_ATTR_INTS:
        at->n = (int)ap->n_ints;
        at->ints = ap->ints;
        break;
    case OQC_ATTR_STRINGS:
        at->n = (int)ap->n_strings;
        at->strings = oqc_arena_alloc(a, (ap->n_strings + 1) * sizeof *at->strings);
        for (size_t i = 0; i < ap->n_strings; i++)
            at->strings[i] = oqc_arena_strndup(a, (const char *)ap->strings[i].data,
                                               ap->strings[i].len);
        break;
    case OQC_ATTR_TENSOR:
    case OQC_ATTR_TENSORS: {
        size_t cnt = t == OQC_ATTR_TENSOR ? (ap->t ? 1 : 0) : ap->n_tensors;
        if (t == OQC_ATTR_TENSOR && !ap->t)
            return oqc_err_node(L->d, L->g, node, "attribute '%s' is TENSOR but has no tensor",
                                at->name);
        at->n = (int)cnt;
        at->tensors = oqc_arena_alloc(a, (cnt + 1) * sizeof *at->tensors);
        for (size_t i = 0; i < cnt; i++) {
            const Onnx__TensorProto *tp = t == OQC_ATTR_TENSOR ? ap->t : ap->tensors[i];
            char *what = oqc_arena_printf(a, "node '%s' attribute '%s' tensor", n->name,
                                          at->name);
            if (oqc_onnx_tensor(&L->ctx, tp, what, &at->tensors[i]) < 0)
                return -1;
        }
        break;
    }
    default:
        at->opaque = attr_summary(a, ap, t);
        break;
    }
    return 0;
}

/* Makes tensor t a constant holding v. */
static void set_const(OqcTensor *t, const OqcValue *v) {
    t->is_const = 1;
    t->dtype = v->dtype;
    t->shape = v->shape;
    t->data = v->data;
    t->nbytes = v->nbytes;
}

/* A Constant node becomes a constant tensor; returns 1 when converted. */
static int fold_constant_node(Loader *L, int node, const Onnx__NodeProto *np) {
    OqcNode *n = &L->g->nodes[node];
    OqcArena *a = L->g->arena;
    if (n->nout != 1 || n->out[0] < 0 || n->nin != 0)
        return oqc_err_node(L->d, L->g, node, "Constant must have no inputs and one output");
    if (n->nattr != 1)
        return oqc_err_node(L->d, L->g, node, "Constant must have exactly one value "
                                              "attribute (value, value_float(s), value_int(s), "
                                              "value_string(s)), found %d attributes",
                            n->nattr);
    (void)np;
    const OqcAttr *at = &n->attr[0];
    OqcValue v = {0};
    if (strcmp(at->name, "value") == 0) {
        v = at->tensors[0];
    } else if (strcmp(at->name, "value_float") == 0 || strcmp(at->name, "value_int") == 0) {
        int isf = at->name[6] == 'f';
        v.dtype = isf ? OQCF_FLOAT : OQCF_INT64;
        v.shape.rank = 0;
        v.nbytes = isf ? 4 : 8;
        v.data = isf ? oqc_arena_dup(a, &at->f, 4) : oqc_arena_dup(a, &at->i, 8);
    } else if (strcmp(at->name, "value_floats") == 0 || strcmp(at->name, "value_ints") == 0) {
        int isf = at->name[6] == 'f';
        v.dtype = isf ? OQCF_FLOAT : OQCF_INT64;
        v.shape.rank = 1;
        v.shape.d[0] = at->n;
        v.nbytes = (size_t)at->n * (isf ? 4 : 8);
        v.data = oqc_arena_dup(a, isf ? (void *)at->floats : (void *)at->ints, v.nbytes);
    } else if (strcmp(at->name, "value_string") == 0) {
        v.dtype = OQCF_STRING;
        v.shape.rank = 0;
        const char **p = oqc_arena_alloc(a, sizeof *p);
        p[0] = at->s;
        v.data = (void *)p;
        v.nbytes = sizeof *p;
    } else if (strcmp(at->name, "value_strings") == 0) {
        v.dtype = OQCF_STRING;
        v.shape.rank = 1;
        v.shape.d[0] = at->n;
        v.data = (void *)at->strings;
        v.nbytes = (size_t)at->n * sizeof(char *);
    } else {
        return oqc_err_node(L->d, L->g, node, "Constant attribute '%s' is not supported "
                                              "(sparse_value?)", at->name);
    }
    set_const(&L->g->tensors[n->out[0]], &v);
    return 1;
}

/* Largest constant ConstantOfShape is folded into. */
#define FOLD_MAX_BYTES ((size_t)256 << 20)

/* ConstantOfShape with a constant shape input becomes a constant; 1 when converted. */
static int fold_constant_of_shape(Loader *L, int node) {
    OqcGraph *g = L->g;
    OqcNode *n = &g->nodes[node];
    if (n->nin != 1 || n->in[0] < 0 || n->nout != 1 || n->out[0] < 0)
        return oqc_err_node(L->d, g, node, "ConstantOfShape needs one input and one output");
    const OqcTensor *in = &g->tensors[n->in[0]];
    if (!in->is_const || !in->data)
        return 0;
    if (in->dtype != OQCF_INT64 || in->shape.rank != 1)
        return oqc_err_node(L->d, g, node, "shape input '%s' must be a 1-D int64 tensor",
                            in->name);
    OqcValue v = {.dtype = OQCF_FLOAT, .shape = {.rank = 0}};
    const OqcAttr *va = oqc_attr_find(n, "value");
    const void *fill = NULL;
    float zero = 0;
    if (va) {
        const OqcValue *tv = &va->tensors[0];
        if (oqc_shape_numel(&tv->shape) != 1 || tv->dtype == OQCF_STRING)
            return oqc_err_node(L->d, g, node, "attribute 'value' must be a one-element "
                                               "numeric tensor");
        v.dtype = tv->dtype;
        fill = tv->data;
    } else {
        fill = &zero;
    }
    const int64_t *dims = in->data;
    int64_t rank = in->shape.d[0];
    if (oqc_onnx_check_dims(&L->ctx, "ConstantOfShape output", n->name, (size_t)rank, dims, &v.shape) < 0)
        return -1;
    size_t el = oqcf_dtype_size(v.dtype), numel = (size_t)oqc_shape_numel(&v.shape);
    v.nbytes = numel * el;
    /* a few bytes of model can ask for gigabytes here (initializers are bounded by the
     * file's size, this is not) */
    if (v.nbytes > FOLD_MAX_BYTES)
        return oqc_err_node(L->d, g, node, "output of shape %s would fill %zu bytes, more "
                            "than the %d MiB oqc makes into a constant",
                            oqc_shape_str(&v.shape, (char[160]){0}, 160), v.nbytes,
                            (int)(FOLD_MAX_BYTES >> 20));
    unsigned char *p = oqc_arena_alloc_raw(g->arena, v.nbytes ? v.nbytes : 1);
    for (size_t i = 0; i < numel; i++)
        memcpy(p + i * el, fill, el);
    v.data = p;
    set_const(&g->tensors[n->out[0]], &v);
    return 1;
}

static int64_t opset_of(const OqcGraph *g, const char *domain) {
    for (int i = 0; i < g->nopsets; i++)
        if (strcmp(g->opsets[i].domain, domain) == 0)
            return g->opsets[i].version;
    return -1;
}

/* The model's name, IR version, producer and opset imports into L->g. */
static int load_model_info(Loader *L, const Onnx__ModelProto *m) {
    OqcGraph *g = L->g;
    OqcArena *a = g->arena;
    g->name = oqc_arena_strdup(a, m->graph->name);
    g->ir_version = m->has_ir_version ? m->ir_version : 0;
    g->producer = oqc_arena_printf(a, "%s%s%s", m->producer_name ? m->producer_name : "",
                                   m->producer_version && m->producer_version[0] ? " " : "",
                                   m->producer_version ? m->producer_version : "");
    if (m->n_opset_import == 0)
        return oqc_err(L->d, "%s: the model has no opset_import", L->path);
    g->opsets = oqc_arena_alloc(a, m->n_opset_import * sizeof *g->opsets);
    for (size_t i = 0; i < m->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *op = m->opset_import[i];
        const char *dom = op->domain ? op->domain : "";
        if (strcmp(dom, "ai.onnx") == 0)
            dom = "";
        g->opsets[g->nopsets].domain = oqc_arena_strdup(a, dom);
        g->opsets[g->nopsets].version = op->has_version ? op->version : 1;
        g->nopsets++;
    }
    return 0;
}

/* The initializers as constant tensors (first: a graph input with an initializer is a
 * constant); every bad one is reported. */
static int load_initializers(Loader *L, const Onnx__GraphProto *gp) {
    OqcGraph *g = L->g;
    int rc = 0;
    for (size_t i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *tp = gp->initializer[i];
        if (!tp->name || !tp->name[0]) {
            rc = oqc_err(L->d, "%s: initializer #%zu has no name", L->path, i);
            continue;
        }
        if (oqc_tensor_find(g, tp->name) >= 0) {
            rc = oqc_err(L->d, "%s: initializer '%s' is defined twice", L->path, tp->name);
            continue;
        }
        OqcValue v = {0};
        if (oqc_onnx_tensor(&L->ctx, tp, "initializer", &v) < 0) {
            rc = -1;
            continue;
        }
        int id = oqc_tensor_add(g, tp->name); /* may move g->tensors */
        set_const(&g->tensors[id], &v);
    }
    if (gp->n_sparse_initializer)
        rc = oqc_err(L->d, "%s: sparse initializers are not supported (%zu found)", L->path,
                     gp->n_sparse_initializer);
    return rc;
}

/* The graph inputs that are not initializers, with their types and shapes. */
static int load_inputs(Loader *L, const Onnx__GraphProto *gp) {
    OqcGraph *g = L->g;
    int rc = 0;
    g->inputs = oqc_arena_alloc(g->arena, (gp->n_input + 1) * sizeof *g->inputs);
    for (size_t i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        const char *nm = vi->name ? vi->name : "";
        int id = oqc_tensor_find(g, nm);
        if (id >= 0 && g->tensors[id].is_const)
            continue; /* old exporters list initializers as inputs too */
        if (id >= 0) {
            rc = oqc_err(L->d, "%s: graph input '%s' is listed twice", L->path, nm);
            continue;
        }
        id = oqc_tensor_add(g, nm);
        g->tensors[id].is_input = 1;
        if (load_value_info(L, vi, &g->tensors[id]) < 0)
            rc = -1;
        g->inputs[g->ninputs++] = id;
    }
    return rc;
}

/* Node i of the graph proto added to L->g (its tensors created on first use, unnamed
 * nodes named OPTYPE_i); *id receives its index.  -1 when it is bad (reported). */
static int load_node(Loader *L, const Onnx__NodeProto *np, size_t i, int *id) {
    OqcGraph *g = L->g;
    OqcArena *a = g->arena;
    int rc = 0;
    const char *dom = np->domain ? np->domain : "";
    if (strcmp(dom, "ai.onnx") == 0)
        dom = "";
    const char *op_type = np->op_type ? np->op_type : "";
    int *ins = oqc_arena_alloc(a, (np->n_input + 1) * sizeof *ins);
    int *outs = oqc_arena_alloc(a, (np->n_output + 1) * sizeof *outs);
    for (size_t k = 0; k < np->n_input; k++)
        ins[k] = np->input[k][0] ? oqc_tensor_get(g, np->input[k]) : -1;
    for (size_t k = 0; k < np->n_output; k++)
        outs[k] = np->output[k][0] ? oqc_tensor_get(g, np->output[k]) : -1;
    OqcOp op = oqc_op_lookup(dom, op_type);
    const char *name = np->name && np->name[0] ? oqc_arena_strdup(a, np->name)
                                               : oqc_arena_printf(a, "%s_%zu", op_type, i);
    *id = oqc_node_add(g, op, oqc_arena_strdup(a, op_type), name, (int)np->n_input, ins,
                       (int)np->n_output, outs);
    OqcNode *n = &g->nodes[*id];
    n->domain = oqc_arena_strdup(a, dom);
    n->opset = opset_of(g, dom);
    if (!op_type[0])
        rc = oqc_err_node(L->d, g, *id, "node has no op_type");
    if (n->opset < 0)
        rc = oqc_err_node(L->d, g, *id, "domain '%s' is not imported by the model "
                                        "(no opset_import for it)", dom[0] ? dom : "ai.onnx");
    n->nattr = (int)np->n_attribute;
    n->attr = oqc_arena_alloc(a, (np->n_attribute + 1) * sizeof *n->attr);
    for (size_t k = 0; k < np->n_attribute; k++)
        if (load_attr(L, *id, np->attribute[k], &n->attr[k]) < 0)
            rc = -1;
    return rc;
}

/* Every node; a Constant's value is folded while everything so far is good (rc: the
 * inputs' result).  rc, or -1. */
static int load_nodes(Loader *L, const Onnx__GraphProto *gp, int rc) {
    for (size_t i = 0; i < gp->n_node; i++) {
        int id;
        if (load_node(L, gp->node[i], i, &id) < 0)
            rc = -1;
        if (rc == 0 && L->g->nodes[id].op == OQC_OP_Constant &&
            fold_constant_node(L, id, gp->node[i]) < 0)
            rc = -1;
    }
    return rc;
}

/* Constant and ConstantOfShape(constant) nodes become constants: their nodes are
 * dropped (the graph is linked again afterwards). */
static int fold_constants(Loader *L) {
    OqcGraph *g = L->g;
    unsigned char *dead = oqc_arena_alloc(g->arena, (size_t)g->nnodes + 1);
    int ndead = 0;
    for (int pass = 0; pass < 2; pass++) /* a ConstantOfShape may read another's output */
        for (int i = 0; i < g->nnodes; i++) {
            if (dead[i])
                continue;
            int f = g->nodes[i].op == OQC_OP_Constant ? 1
                  : g->nodes[i].op == OQC_OP_ConstantOfShape ? fold_constant_of_shape(L, i)
                  : 0;
            if (f < 0)
                return -1;
            if (f > 0) {
                dead[i] = 1;
                ndead++;
            }
        }
    if (ndead)
        oqc_graph_drop_nodes(g, dead);
    return 0;
}

/* The graph outputs; an error for a name nothing defines, or none at all. */
static int load_outputs(Loader *L, const Onnx__GraphProto *gp) {
    OqcGraph *g = L->g;
    int rc = 0;
    g->outputs = oqc_arena_alloc(g->arena, (gp->n_output + 1) * sizeof *g->outputs);
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *nm = gp->output[i]->name ? gp->output[i]->name : "";
        int id = oqc_tensor_find(g, nm);
        if (id < 0) {
            rc = oqc_err(L->d, "%s: graph output '%s' is not produced by any node, "
                               "initializer or input", L->path, nm);
            continue;
        }
        g->tensors[id].is_output = 1;
        g->outputs[g->noutputs++] = id;
    }
    if (gp->n_output == 0)
        rc = oqc_err(L->d, "%s: the graph has no outputs", L->path);
    return rc;
}

/* Every tensor read or listed as an output must come from somewhere (the first 20
 * node inputs that do not are reported). */
static int check_sources(Loader *L) {
    const OqcGraph *g = L->g;
    int rc = 0, reported = 0;
    for (int i = 0; i < g->nnodes; i++)
        for (int k = 0; k < g->nodes[i].nin; k++) {
            int t = g->nodes[i].in[k];
            const OqcTensor *tt = t >= 0 ? &g->tensors[t] : NULL;
            if (tt && tt->producer < 0 && !tt->is_input && !tt->is_const && reported++ < 20)
                rc = oqc_err_node(L->d, g, i, "input '%s' is not produced by any node, "
                                              "initializer or graph input", tt->name);
        }
    for (int i = 0; i < g->noutputs; i++) {
        const OqcTensor *tt = &g->tensors[g->outputs[i]];
        if (tt->producer < 0 && !tt->is_input && !tt->is_const)
            rc = oqc_err(L->d, "%s: graph output '%s' is not produced by any node, "
                               "initializer or input", L->path, tt->name);
    }
    return rc;
}

/* Builds the IR from the unpacked model. */
static int build_graph(Loader *L, const Onnx__ModelProto *m) {
    const Onnx__GraphProto *gp = m->graph;
    if (load_model_info(L, m) < 0 || load_initializers(L, gp) < 0)
        return -1;
    int rc = load_nodes(L, gp, load_inputs(L, gp));
    if (rc < 0 || fold_constants(L) < 0)
        return -1;
    if (load_outputs(L, gp) < 0 || oqc_graph_link(L->g, L->d) < 0)
        return -1;
    if (check_sources(L) < 0)
        return -1;
    return oqc_graph_toposort(L->g, L->d);
}

static char *dir_of(OqcArena *a, const char *path) {
    const char *slash = strrchr(path, '/');
    return slash ? oqc_arena_strndup(a, path, (size_t)(slash - path)) : oqc_arena_strdup(a, ".");
}

OqcGraph *oqc_load_onnx(const char *path, OqcDiag *d) {
    struct stat st;
    int fd = oqc_in_open(path, NULL, &st, d);
    if (fd < 0)
        return NULL;
    if (st.st_size == 0) {
        oqc_err(d, "%s: not a valid ONNX model: the file is empty", path);
        close(fd);
        return NULL;
    }
    OqcGraph *g = oqc_graph_new(path);
    Loader L = {.g = g, .d = d, .path = g->path, .dir = dir_of(g->arena, path),
                .pb = {.alloc = pb_alloc, .free = pb_free, .allocator_data = g->arena}};
    L.ctx = (OqcOnnxCtx){.arena = g->arena, .d = d, .path = L.path, .dir = L.dir};
    Onnx__ModelProto *m =
        oqc_onnx_read_model(fd, (uint64_t)st.st_size, &L.pb, g->arena, L.path, d);
    close(fd);
    if (!m || build_graph(&L, m) < 0) {
        oqc_graph_free(g);
        return NULL;
    }
    return g;
}

int oqc_load_tensor_pb(const char *path, OqcArena *a, OqcValue *out, const char **name,
                       OqcDiag *d) {
    FILE *f = oqc_in_fopen(path, d);
    if (!f)
        return -1;
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0, got;
    do {
        if (n == cap) {
            cap = cap ? 2 * cap : 65536;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return oqc_err(d, "%s: out of memory", path);
            }
            buf = nb;
        }
        got = fread(buf + n, 1, cap - n, f);
        n += got;
    } while (got > 0);
    fclose(f);
    /* A throwaway graph gives convert_tensor its arena and error context. */
    OqcGraph tmp = {.arena = a, .path = path};
    Loader L = {.g = &tmp, .d = d, .path = path, .dir = dir_of(a, path),
                .pb = {.alloc = pb_alloc, .free = pb_free, .allocator_data = a}};
    L.ctx = (OqcOnnxCtx){.arena = a, .d = d, .path = path, .dir = L.dir};
    Onnx__TensorProto *tp = n ? onnx__tensor_proto__unpack(&L.pb, n, buf) : NULL;
    free(buf);
    if (!tp)
        return oqc_err(d, "%s: not a valid ONNX TensorProto file", path);
    if (name)
        *name = oqc_arena_strdup(a, tp->name);
    return oqc_onnx_tensor(&L.ctx, tp, "tensor", out);
}
