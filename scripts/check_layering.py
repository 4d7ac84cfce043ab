#!/usr/bin/env python3
"""Checks that every #include between sluice's modules follows a link edge.

Reads BUILD_DIR/layering.txt (CMake's sluice_layering_manifest(): per layer
its folder, target, the public headers it owns, and its PUBLIC and PRIVATE
link edges) and the sources. A layer is a module (src/NAME and the public
headers it owns) or another target built from a folder (cli, train,
python, cuda).

- A file of layer M may include the headers of M, of M's direct link
  dependencies, and of what those export PUBLIC: what the build gives M.
- M's interface is its public headers and those of its internal headers
  (src/M/*.h) that another layer includes. The interface may include only
  headers of M's PUBLIC closure: a consumer gets nothing else.
- A PUBLIC edge must be needed by M's interface; otherwise PRIVATE serves.
- Every public header (include/sluice) is owned by one module.

Prints one line per finding and exits 1; prints a summary and exits 0 when
the layering holds. Usage: check_layering.py BUILD_DIR/layering.txt SOURCE_DIR
"""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_manifest(path):
    layers, cur = {}, None
    with open(path) as f:
        for line in f:
            key, _, rest = line.rstrip("\n").partition(" ")
            words = rest.split()
            if key == "layer":
                cur = layers[words[0]] = {"target": words[1]}
            else:
                cur[key] = words
    return layers


def main(manifest, root):
    layers = read_manifest(manifest)
    by_target = {}
    for name, layer in layers.items():
        by_target[layer["target"]] = name
        by_target["sluice::" + name] = name
        if layer["target"].startswith("sluice_"):  # sluice_X is aliased sluice::X
            by_target["sluice::" + layer["target"][len("sluice_"):]] = name
    owner = {"sluice/" + h: name for name, layer in layers.items() for h in layer["headers"]}

    def edges(name, kind):
        return {by_target[t] for t in layers[name][kind] if t in by_target}

    def public_closure(name, seen=None):
        seen = set() if seen is None else seen
        if name not in seen:
            seen.add(name)
            for d in edges(name, "public"):
                public_closure(d, seen)
        return seen

    def module_of(inc):
        if inc in owner:
            return owner[inc]
        first = inc.split("/")[0]
        return first if first in layers and "/" in inc else None

    # Every file of every layer, with the layers its includes belong to.
    files = {}  # path relative to root -> (layer, [(include, layer)])
    unowned = set()
    for name in layers:
        base = os.path.join(root, "src", name)
        base = base if os.path.isdir(base) else os.path.join(root, name)
        paths = [os.path.join("include/sluice", h) for h in layers[name]["headers"]]
        for dirpath, _, names in os.walk(base):
            paths += [os.path.relpath(os.path.join(dirpath, n), root)
                      for n in names if n.endswith((".h", ".cc", ".cu"))]
        for rel in paths:
            with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                text = f.read()
            incs = []
            for inc in INCLUDE.findall(text):
                if inc.startswith("sluice/") and inc not in owner:
                    unowned.add(inc)
                elif module_of(inc) is not None:
                    incs.append((inc, module_of(inc)))
            files[rel] = (name, incs)

    def header_path(inc):
        return os.path.join("include", inc) if inc.startswith("sluice/") else os.path.join("src", inc)

    # The interface: public headers, and internal headers another layer includes.
    interface = {rel for rel, (name, _) in files.items() if rel.startswith("include/")}
    for rel, (name, incs) in files.items():
        for inc, m in incs:
            if m != name:
                interface.add(header_path(inc))

    findings = []
    for rel in sorted(files):
        name, incs = files[rel]
        target = layers[name]["target"]
        visible = {name}.union(*(public_closure(d) for d in edges(name, "public") | edges(name, "private")))
        exported = {name}.union(*(public_closure(d) for d in edges(name, "public")))
        for inc, m in incs:
            if m not in visible:
                findings.append(f"{rel}: includes {inc} of {m}, but {target} does not link {m}")
            elif rel in interface and m not in exported:
                findings.append(f"{rel}: an interface header includes {inc} of {m}, which {target} "
                                f"does not link PUBLIC")
    for name in sorted(layers):
        used = set()
        for rel in interface:
            if rel in files and files[rel][0] == name:
                used |= {m for _, m in files[rel][1]}
        public = edges(name, "public")
        for d in sorted(public):
            # Needed: d's headers are used, or headers only d brings.
            others = set().union(*(public_closure(e) for e in public - {d}))
            if d not in used and not (public_closure(d) - others) & used:
                findings.append(f"{layers[name]['target']} links {d} PUBLIC, but its interface "
                                f"includes nothing of {d}'s: PRIVATE serves")
    for inc in sorted(unowned):
        findings.append(f"include/{inc}: no module owns it (sluice_module HEADERS)")
    for line in findings:
        print(line)
    if not findings:
        print(f"layering holds: {len(layers)} layers, {len(files)} files, "
              f"{sum(len(i) for _, i in files.values())} includes between or within modules")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
