#!/usr/bin/python3
"""validate_json.py SCHEMA FILE... - checks oqc --json documents against the schema
(docs/oqc-json.schema.json) with Debian's python3-jsonschema (JSON Schema 2020-12).

Each FILE must hold exactly one JSON document, parsed strictly: NaN, Infinity and
duplicate keys are errors (Python's json module accepts the first two by default).
Prints "invalid FILE: why" for each bad file and exits 1 if there was one; exit 2 when
the schema itself is not a valid 2020-12 schema."""
import json
import sys

import jsonschema


def no_constants(name):
    raise ValueError("non-JSON number " + name)


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate key in an object")
    return dict(pairs)


def main():
    with open(sys.argv[1], encoding="ascii") as f:
        schema = json.load(f)
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as e:
        print("invalid schema %s: %s" % (sys.argv[1], e.message))
        return 2
    v = jsonschema.Draft202012Validator(schema)
    bad = 0
    for path in sys.argv[2:]:
        try:
            with open(path, "rb") as f:
                raw = f.read()
            # oqc writes pure ASCII (json.c): any other byte is an error
            doc = json.loads(raw.decode("ascii"), parse_constant=no_constants,
                             object_pairs_hook=no_duplicates)
            if not v.is_valid(doc):
                # the root's oneOf hides the reason: ask the branch of the document's
                # command (when it names one) for it
                cmd = doc.get("command") if isinstance(doc, dict) else None
                sub = v
                if cmd in schema["$defs"]:
                    sub = jsonschema.Draft202012Validator(
                        {"$ref": "#/$defs/" + cmd, "$defs": schema["$defs"]})
                best = jsonschema.exceptions.best_match(sub.iter_errors(doc)) or \
                    jsonschema.exceptions.best_match(v.iter_errors(doc))
                raise ValueError("%s at /%s" % (best.message[:300],
                                                "/".join(str(p) for p in best.absolute_path)))
        except (ValueError, UnicodeDecodeError) as e:
            print("invalid %s: %s" % (path, e))
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
