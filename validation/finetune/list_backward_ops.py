"""The ATen ops one decoder layer's backward runs in transformers' own modules (CPU; needs torch and
transformers): the check behind train/kernels.py's eager_fused_qkv_kernels (Phi-3's fused qkv_proj
and gate_up_proj against Llama's separate projections).

    python validation/finetune/list_backward_ops.py phi3      # or llama

Setup: a one-layer model of the named model_type at a tiny shape (h 64, 4 heads of 16, f 96,
8 tokens, fp32 weights under bf16 autocast, SDPA); the layer's forward, then its backward under a
TorchDispatchMode that prints each op and its output's element count (views left out). Read: per
token h = 64 elements (512 for 8 tokens), the fused qkv width 3 h (1,536).
Seen with torch 2.13.0, transformers 5.24.0: Phi-3's backward has one cat (2 f: the chunk's
gradient) where Llama has an add of gate's and up's input gradients; for q and k a slice_backward
and an add after the rotary's; three slice_backward of 3 h and two adds of 3 h where Llama has two
adds of h.
"""
import sys

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from transformers import AutoConfig, AutoModelForCausalLM

VIEWS = {"detach", "view", "t", "transpose", "_unsafe_view", "expand", "alias", "as_strided",
         "unsqueeze", "squeeze", "permute", "slice", "split", "split_with_sizes", "select"}


class _Log(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ops = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        first = out[0] if isinstance(out, (tuple, list)) and out else out
        name = func.overloadpacket.__name__
        if name not in VIEWS:
            self.ops.append((name, first.numel() if isinstance(first, torch.Tensor) else None))
        return out


def backward_ops(model_type):
    cfg = AutoConfig.for_model(model_type, hidden_size=64, intermediate_size=96,
                               num_attention_heads=4, num_key_value_heads=4, num_hidden_layers=1,
                               vocab_size=100, max_position_embeddings=64, pad_token_id=None,
                               bos_token_id=None, eos_token_id=None)
    model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa").float().train()
    x = torch.randn(1, 8, 64, requires_grad=True)
    pos = torch.arange(8)[None]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        emb = model.model.rotary_emb(x, pos)
        y = model.model.layers[0](x, position_embeddings=emb, attention_mask=None, position_ids=pos)
        y = y[0] if isinstance(y, tuple) else y
    log = _Log()
    with log:
        y.backward(torch.randn_like(y))
    return log.ops


if __name__ == "__main__":
    for mt in sys.argv[1:] or ["phi3", "llama"]:
        print(mt, backward_ops(mt))
