#!/usr/bin/env python3
"""hf_params.py - transformers' own parameter counts of Hugging Face config.json files.

Each file is built the way a user's training script builds it, AutoConfig.for_model
(model_type, **config) and AutoModelForCausalLM.from_config, on the meta device (no
memory, nothing downloaded), and counted by the model's num_parameters(), which
counts a tied LM head once. Per-module counts of the first decoder layer and of
what lies outside the layers help find where a count differs.

Output: a comment header naming the command and the versions, then one
tab-separated line per file:
    file  model_type  num_parameters  layers  layer0  outside  layer0_modules
layer0_modules is "name=count,..." over the first layer's children. tests/data/
hf-params.tsv is this script's output; tests/test_hfconfig.c compares zbench's count
of each file with it, exactly.

Usage: python3 peers/hf_params.py tests/data/hf-*.json > tests/data/hf-params.tsv
"""
import json
import os
import sys


def layers_of(model):
    """The ModuleList of decoder layers (model.model.layers, transformer.h, ...)."""
    import torch

    best = None
    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.ModuleList) and len(mod) > 0:
            if best is None or len(mod) > len(best[1]):
                best = (name, mod)
    return best


def count(path):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    with open(path) as f:
        d = json.load(f)
    mt = d.pop("model_type")
    cfg = AutoConfig.for_model(mt, **d)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    total = model.num_parameters()
    name, layers = layers_of(model)
    layer0 = sum(p.numel() for p in layers[0].parameters())
    in_layers = sum(p.numel() for p in {id(p): p for p in layers.parameters()}.values())
    parts = ",".join(f"{n}={sum(p.numel() for p in m.parameters())}" for n, m in layers[0].named_children())
    return mt, total, len(layers), layer0, total - in_layers, parts


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    import torch
    import transformers

    print("# hf-params.tsv - transformers' num_parameters() of the config.json files in tests/data")
    print("# made by: python3 peers/hf_params.py " + " ".join(os.path.relpath(a) for a in argv[1:]))
    print(f"# transformers {transformers.__version__}, torch {torch.__version__}, meta device")
    print("file\tmodel_type\tnum_parameters\tlayers\tlayer0\toutside\tlayer0_modules")
    for path in argv[1:]:
        mt, total, n, layer0, outside, parts = count(path)
        print(f"{os.path.basename(path)}\t{mt}\t{total}\t{n}\t{layer0}\t{outside}\t{parts}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
