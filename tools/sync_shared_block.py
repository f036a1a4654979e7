#!/usr/bin/env python3
"""Copy each shared block from its master script (between its begin/end markers) over the copy
in every other calc_*.py that has one. tests/test_shared_copies.py checks they agree.

Blocks and masters:
  model spec          calc_transformer_params.py  (flags, config reading, per-layer formulas)
  training memory     calc_transformer_mem.py     (model states, activations, pipeline stages)
  collectives         calc_comm.py                (collective times over nodes: ring, tree, NVLS, two-level)
  training collectives calc_comm.py               (the collectives of one training step)
  training flops      calc_transformer_flops.py   (forward, backward, recompute FLOPs by component)
"""
import glob
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCKS = {  # name: master script
    "model spec": "calc_transformer_params.py",
    "training memory": "calc_transformer_mem.py",
    "collectives": "calc_comm.py",
    "training collectives": "calc_comm.py",
    "training flops": "calc_transformer_flops.py",
}


def markers(name):
    return f"# === shared {name}: begin ===", f"# === shared {name}: end ==="


def split(text, name):
    begin, end = markers(name)
    i, j = text.index(begin), text.index(end) + len(end)
    return text[:i], text[i:j], text[j:]


def main():
    for name, master_file in BLOCKS.items():
        master = os.path.join(ROOT, master_file)
        _, block, _ = split(open(master, encoding="utf-8").read(), name)
        for path in sorted(glob.glob(os.path.join(ROOT, "calc_*.py"))):
            text = open(path, encoding="utf-8").read()
            if path == master or markers(name)[0] not in text:
                continue
            head, old, tail = split(text, name)
            if old != block:
                with open(path, "w", encoding="utf-8") as fh:
                    fh.write(head + block + tail)
                print(f"updated the {name} block of {os.path.basename(path)}")


if __name__ == "__main__":
    main()
