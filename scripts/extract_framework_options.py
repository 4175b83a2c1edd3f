#!/usr/bin/env python3
"""Writes data/frameworks/*.json, the option lists the launch-configuration readers check names against, from the
framework facts extracted from each framework's source (megatron_all_flags.json, deepspeed_sections.json,
torchtitan_all_keys.json, nemo.json). Usage: scripts/extract_framework_options.py FACTS_DIR"""
import json
import os
import sys

facts = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data",
                                                          "frameworks")
out_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "frameworks")
os.makedirs(out_dir, exist_ok=True)


def load(name):
    with open(os.path.join(facts, name)) as f:
        return json.load(f)


def write(name, value, compact=False):
    with open(os.path.join(out_dir, name), "w") as f:
        if compact:
            # One flag per line, no spaces.
            f.write("{\"source\":" + json.dumps(value["source"]) + ",\"flags\":{\n")
            f.write(",\n".join(json.dumps(k) + ":" + json.dumps(v, separators=(",", ":")) for k, v in value["flags"].items()))
            f.write("\n}}\n")
        else:
            json.dump(value, f, indent=0, sort_keys=False)
            f.write("\n")


def source_line(src):
    return "{} @ {}: {}".format(src["repo"], src["commit"], ", ".join(src.get("paths", [])))


megatron = load("megatron_all_flags.json")
# The flags that matter for memory, layout or step time (megatron.json's curated subset): a reader reports those it
# does not model.
relevant = {option["name"] for option in load("megatron.json")["options"]}
flags = {}
for option in megatron["options"]:
    kind = "flag" if option["action"] in ("store_true", "store_false") else (
        "list" if option["type"] == "list" else "value")
    # Compact (the file is compiled in, and compilers need string literals under 64 KiB): the destination only where
    # argparse's would differ from the flag's own name, the type only where it is not implied by the kind.
    entry = {"kind": kind}
    if option["dest"] != option["flags"][0].lstrip("-").replace("-", "_"):
        entry["dest"] = option["dest"]
    if kind == "value" and option["type"] != "str":
        entry["type"] = option["type"]
    if option.get("choices"):
        entry["choices"] = option["choices"]
    if option["action"] == "store_false":
        entry["sets"] = False
    if any(name in relevant for name in option["flags"]):
        entry["relevant"] = True
    for name in option["flags"]:
        flags[name] = entry
write("megatron_flags.json", {"source": source_line(megatron["source"]), "flags": flags}, compact=True)

deepspeed = load("deepspeed_sections.json")
sections = {}
for name, section in deepspeed["sections"].items():
    keys = []
    for field in section["fields"]:
        keys.append(field["key"])
        keys.extend(field.get("aliases", []))
        if field.get("alias"):
            keys.append(field["alias"])
    sections[name] = sorted(set(keys))
write("deepspeed_keys.json", {"source": source_line(deepspeed["source"]), "top_level_keys": deepspeed["top_level_keys"],
                              "strict_sections": sections, "plain_sections": deepspeed["plain_dict_sections"]})

titan = load("torchtitan_all_keys.json")
write("torchtitan_keys.json", {"source": source_line(titan["source"]),
                               "keys": {k["key"]: k["type"] for k in titan["keys"]}})

nemo = load("nemo.json")
write("nemo_keys.json", {"source": source_line(nemo["source"]),
                         "keys": {o["name"]: o["type"] for o in nemo["options"]}})
