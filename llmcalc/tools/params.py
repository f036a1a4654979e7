"""Parameter count of a decoder-only transformer: total, per component, and active per token (MoE).

Counts every weight the Hugging Face implementation (transformers 5) allocates, exactly, layer by
layer: token and position embeddings (and Gemma 4's per-layer embeddings), each layer's attention
(MHA/GQA/MQA or DeepSeek's MLA; sliding, chunked or NoPE; q/k norms, biases, gpt-oss's sinks,
K = V and KV-sharing layers, DeepSeek-V3.2/GLM-5's lightning indexer) and its MLP (dense, or MoE
with routed, shared and zero-computation experts, router and its bias), the layer norms, the final
norm and the output head (tied or not). Tied weights are counted once. A model is read from its
config.json as a list of layers (transformers 5's layer_types / mlp_layer_types, else each
family's own rule); the report shows each distinct layer kind. Multimodal configs count the
language model and say that the towers are not counted. Anything read generically or not read
is a WARNING line in the result.

Symbols: V vocab, h hidden, L layers, a query heads, kv key/value heads, d head dim, f MLP width,
E routed experts, k experts per token (top-k), f_e expert width.

Defaults (no flags): the cookbook's defaults (V 51200, h 6144, L 44) on a GPT-NeoX-style block:
LayerNorm with bias, biased linear layers, rotary positions (no learned position table), untied
output head. That is GPT-NeoX-20B's layout (with its V 50432 it gives its exact 20,554,567,680).

Conventions: "non-embedding" excludes the token embedding, any learned position table, per-layer
embedding tables and an untied output head (Kaplan et al. 2020, sec. 2.1). "active" is what one
token's forward touches under top-k routing: all dense weights, the shared experts, the router and
k of the E routed experts per MoE layer (embeddings and output head included, as model cards count
it); with Z zero-computation experts (LongCat-Flash) k E / (E + Z) real experts, the expectation
under uniform routing. Multi-token-prediction modules are not counted (transformers does not build
them in the model; the report says so). LongCat-Flash: transformers allocates gate_up_proj rows for
the zero experts too; they are never used or loaded, and are stated, not counted.

Examples:
  python calc_transformer_params.py
  python calc_transformer_params.py -l 96 -hs 12288                 # GPT-3 175B shape
  python calc_transformer_params.py -l 12 -hs 768 --moe -e 512       # cookbook MoE example
  python calc_transformer_params.py --hf_model_name_or_path path/to/Mixtral-8x7B/config.json
  python calc_transformer_params.py --hf_model_name_or_path tests/fixtures/configs/gpt-oss-20b.json
  python calc_transformer_params.py -l 32 -hs 4096 -a 32 --num-kv-heads 8 --ffn-hidden-size 14336 \\
      --swiglu --norm rmsnorm --no-bias -v 128256 --json           # Llama-3-8B from flags

References:
  Kaplan et al. 2020, "Scaling Laws for Neural Language Models", sec. 2.1 (12 L h^2 counting).
  Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters", sec. 5.1.
  DeepSeek-AI 2024, "DeepSeek-V2", sec. 2.1 (MLA) and 2.2 (DeepSeekMoE); Shazeer 2020 (GLU MLPs).
  Hugging Face transformers modeling_*.py of each family (the counts are checked against them).
"""

import sys

from ..cli import (OneLineErrorParser, add_model_args, add_output_args, bounded_int, calc_errors,
    check_ranges, parse_tool_args, print_result, print_warnings, ranges_epilog, run_tool)
from ..model.formulas import param_breakdown
from ..model.spec import resolve_model_spec, spec_summary


# The range of each script flag (argparse dest: (lo, hi), both inclusive): far past any real
# context (1e9 tokens ~ 100 x the longest). The model flags have their caps in model/spec.py.
FLAG_RANGES = {"sequence_length": (1, 10 ** 9)}


def human_count(n):
    """12345678 -> '12.35 M' (decimal: K=1e3, M=1e6, B=1e9, T=1e12)."""
    for div, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")):
        if abs(n) >= div:
            return f"{n / div:.2f} {unit}"
    return f"{n}"


def format_report(res):
    """Aligned human-readable table of the breakdown returned by main."""
    spec, total = res["model"], res["total_params"]
    rows = [("Token embedding", res["embedding_params"]),
            ("Position embedding (learned)", res["position_embedding_params"]),
            ("Embedding norm", res["embedding_norm_params"]),
            ("Embedding projections (in/out)", res["embedding_projection_params"]),
            (f"Attention ({res['num_attention_layers']} layers)", res["attention_params"]),
            (f"Linear attention / SSM ({spec['num_layers'] - res['num_attention_layers']} layers)",
             res["linear_mixer_params"]),
            (f"Dense MLP ({res['num_dense_layers']} layers)", res["mlp_params"]),
            (f"Routed experts ({res['num_moe_layers']} layers x {spec['num_experts']})",
             res["routed_expert_params"]),
            ("Shared experts", res["shared_expert_params"]),
            ("Routers", res["router_params"]),
            ("Layer norms", res["layer_norm_params"]),
            ("Other layer weights (per-layer inputs, hyper-connections)", res["layer_extra_params"]),
            ("Per-layer embeddings", res["per_layer_embedding_params"]),
            ("Other model weights", res["other_params"]),
            ("Final norm", res["final_norm_params"]),
            ("Output head" + (" (tied: counted in embedding)" if spec["tied_embeddings"] else ""),
             res["output_head_params"])]
    lines = [f"Model: {spec['described']}", f"{'component':<44}{'params':>18}{'':>10}{'% total':>9}"]
    for name, n in rows:
        if n or name.startswith(("Token", "Attention", "Output")):
            lines.append(f"{name:<44}{n:>18,}{human_count(n):>10}{100 * n / total:>8.2f}%")
    pl = res["per_layer"]
    lines.append("per layer: attention {:,}, norms {:,}".format(pl["attention"], pl["norms"])
                 + (", linear mixer {:,}".format(pl["linear_mixer"]) if pl["linear_mixer"] else "")
                 + (", dense MLP {:,}".format(pl["dense_mlp"]) if res["num_dense_layers"] else "")
                 + (", one expert {:,}".format(pl["moe_one_expert"]) if res["num_moe_layers"] else ""))
    if len(res["layer_kinds"]) > 1:
        lines.append("layer kinds:")
        for k in res["layer_kinds"]:
            lines.append(f"  {k['layers']:>4} x  attention {k['attention']:<28} mlp {k['mlp']:<24}"
                         f"{k['params_per_layer']:>16,} per layer")
    lines.append("-" * 81)
    lines.append(f"{'Total':<44}{total:>18,}{human_count(total):>10}")
    lines.append(f"{'Non-embedding':<44}{res['non_embedding_params']:>18,}"
                 f"{human_count(res['non_embedding_params']):>10}")
    if res["num_moe_layers"]:
        lines.append(f"{'Active per token (top-%d of %d)' % (spec['topk'], spec['num_experts']):<44}"
                     f"{res['active_params']:>18,}{human_count(res['active_params']):>10}")
    for w in res["warnings"]:
        lines.append(f"WARNING: {w}")
    lines.append("Convention: exact weight count as Hugging Face allocates it, tied weights once; "
                 "non-embedding excludes token/position embeddings and an untied head; active = "
                 "dense weights + shared experts + router + top-k routed experts.")
    return "\n".join(lines)


def build_parser():
    parser = OneLineErrorParser(description=__doc__)
    add_model_args(parser)
    parser.add_argument("--sequence-length", "-s", type=bounded_int, default=2048,
                        help="rows of a learned position table when no config or "
                        "--max-position-embeddings says (cookbook flag; default 2048)")
    add_output_args(parser)
    parser.epilog = lambda: ranges_epilog(parser, FLAG_RANGES)  # built only for --help
    return parser


def main(argv=None):
    parser = build_parser()
    args = parse_tool_args(parser, argv)
    if args.sequence_length <= 0:
        parser.error(f"--sequence-length must be positive, got {args.sequence_length}")
    check_ranges(args, parser, FLAG_RANGES)
    with calc_errors(parser):
        spec, notes = resolve_model_spec(vars(args))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    print_warnings(spec["warnings"], as_json=args.json or args.brief)
    res = {"model": spec_summary(spec), **param_breakdown(spec), "warnings": spec["warnings"],
           "convention": "exact weight count, tied weights once; non-embedding excludes token and "
                         "position embeddings and an untied output head; active counts top-k routed "
                         "experts plus all dense weights, shared experts and routers"}
    print_result(res, as_json=args.json, report=format_report,
                 brief=(lambda r: f"{r['total_params']} parameters") if args.brief else None)
    return res


if __name__ == "__main__":
    run_tool(main)
