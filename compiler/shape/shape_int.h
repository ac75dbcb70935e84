/* shape_int.h - internal to shape inference (shape.c): the rules' view of a node
 * (ops_shape.h) and this layer's API. */
#ifndef OQC_SHAPE_INT_H
#define OQC_SHAPE_INT_H

#include "ops_shape.h"
#include "shape.h"

#endif /* OQC_SHAPE_INT_H */
