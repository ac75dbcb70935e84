#!/bin/sh
# hardening_dot.sh - `oqc dump --format dot` draws the graph oqc runs (issue 31, item
# 14): after every pass, the DOT of every bundled model has no more connected pieces
# than the model as loaded.  Edges through a buffer written in place (an eliminated
# Concat, which no node produces) come from the producers of its channel views; they
# were dropped, and squeezenet1_1 fell into 9 pieces.
. tests/cli/lib.sh
only_config default

# pieces: the number of weakly connected components of a DOT graph on standard input;
# an input or output without edges is not counted (an output the passes folded to a
# constant, an input nothing reads any more): only the ops and what links them are
pieces() {
    awk 'function find(x) { while (p[x] != x) { p[x] = p[p[x]]; x = p[x] } return x }
         /^  n[0-9]+ \[/ { if (!($1 in p)) p[$1] = $1 }
         /^  [nto][0-9]+ -> [nto][0-9]+/ { a = $1; b = $3; sub(/;$/, "", b)
             if (!(a in p)) p[a] = a; if (!(b in p)) p[b] = b
             ra = find(a); rb = find(b); if (ra != rb) p[ra] = rb }
         END { n = 0; for (x in p) if (find(x) == x) n++; print n }'
}
nmodels=0
for m in models/tiny/*.onnx models/fashion/*.onnx models/tv/*.onnx; do
    [ -f "$m" ] || continue
    base=$("$OQC" dump "$m" --format dot 2>/dev/null | pieces)
    [ -n "$base" ] && [ "$base" -gt 0 ] || continue   # not loadable as is (dynamic shapes)
    nmodels=$((nmodels + 1))
    bad=
    for p in cleanup fold-bn fuse-cbr merge-1x1 concat-elim all; do
        "$OQC" dump "$m" --format dot --after $p >"$TMP/g.dot" 2>/dev/null || continue
        n=$(pieces <"$TMP/g.dot")
        [ "$n" -le "$base" ] || bad="$bad $p:$n"
    done
    [ -z "$bad" ] && ok "$m: $base piece(s) after every pass" || fail "$m: $base as loaded, after$bad"
done
check "models checked: $nmodels" [ "$nmodels" -gt 100 ]
n=$("$OQC" dump models/fashion/fashion_cnn.onnx --format dot --after all | grep -c 'style=bold')
check "fashion: edges through its concat buffer drawn ($n)" [ "$n" -gt 0 ]
finish
