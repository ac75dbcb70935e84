#!/bin/sh
# golden_dumps.sh - text dumps of the committed models equal the golden files in
# tests/golden/ (byte for byte), both as loaded (NAME.txt) and after the whole pass
# pipeline (NAME.after-all.txt); dumps are deterministic, and the DOT output renders
# with Graphviz. Regenerate the goldens after an intended format change with
#   OQC_UPDATE_GOLDEN=1 sh tests/cli/golden_dumps.sh     (then review the diff)
. tests/cli/lib.sh

for m in models/fashion/*.onnx models/tv/squeezenet1_1.onnx models/tiny/*.onnx; do
    [ -f "$m" ] || continue
    case "$m" in
        *dynamic_batch*) args="--input-shape x=1x3x8x8" ;;
        *merge_inception*) args="--input-shape x=2x6x5x5" ;;
        *) args="" ;;
    esac
    name=$(echo "$m" | sed 's|^models/||; s|/|__|g; s|\.onnx$||')
    gold="tests/golden/$name.txt"
    # shellcheck disable=SC2086
    if ! "$OQC" dump "$m" $args -o "$TMP/a.txt" 2>"$TMP/err"; then
        fail "dump $m: $(cat "$TMP/err")"
        continue
    fi
    # shellcheck disable=SC2086
    "$OQC" dump "$m" $args > "$TMP/b.txt"
    cmp -s "$TMP/a.txt" "$TMP/b.txt" || fail "dump of $m is not deterministic"
    if [ -n "${OQC_UPDATE_GOLDEN:-}" ]; then
        cp "$TMP/a.txt" "$gold"
    fi
    if [ -f "$gold" ] && cmp -s "$TMP/a.txt" "$gold"; then
        ok "golden $name"
    else
        fail "golden $name differs: $(diff "$gold" "$TMP/a.txt" 2>&1 | head -n 5)"
    fi
    # After the pipeline (only for models oqc can run: --after implies the strict path).
    # A model `check --for run` refuses must have no after-all golden: one that has it ran before,
    # so the refusal is a regression, not a model to leave out.
    gold="tests/golden/$name.after-all.txt"
    # shellcheck disable=SC2086
    if ! "$OQC" check "$m" $args --for run -q 2>"$TMP/err"; then
        [ -f "$gold" ] && fail "$m: oqc check refuses it, but $gold exists: $(head -n 2 "$TMP/err")"
        continue
    fi
    # shellcheck disable=SC2086
    if ! "$OQC" dump "$m" $args --after all -o "$TMP/p.txt" 2>"$TMP/err"; then
        fail "dump --after all $m: $(cat "$TMP/err")"
        continue
    fi
    [ -n "${OQC_UPDATE_GOLDEN:-}" ] && cp "$TMP/p.txt" "$gold"
    if [ -f "$gold" ] && cmp -s "$TMP/p.txt" "$gold"; then
        ok "golden $name after all passes"
    else
        fail "golden $name after all differs: $(diff "$gold" "$TMP/p.txt" 2>&1 | head -n 5)"
    fi
done

# DOT: renders to SVG with one box per node.
for m in models/tiny/mixed_small_cnn.onnx models/fashion/fashion_cnn.onnx; do
    [ -f "$m" ] || continue
    "$OQC" dump "$m" --format dot -o "$TMP/g.dot" &&
        dot -Tsvg "$TMP/g.dot" -o "$TMP/g.svg" 2>"$TMP/err" && grep -q "<svg" "$TMP/g.svg" &&
        ok "dot renders $m" || fail "dot $m: $(cat "$TMP/err")"
    nodes=$(grep -c '^node ' "$TMP/a.txt" 2>/dev/null)
    "$OQC" dump "$m" -o "$TMP/n.txt"
    want=$(grep -c '^node ' "$TMP/n.txt")
    got=$(grep -c '^  n[0-9]* \[label' "$TMP/g.dot")
    [ "$want" = "$got" ] && ok "dot has $got node boxes" || fail "dot has $got boxes, want $want"
done
finish
