#!/usr/bin/env python3
"""What Hugging Face transformers' KV cache holds per layer for sliding-window models, step by step.

Builds tiny random Mistral (window on every layer) and Gemma 2 (window on even layers) models,
prefills a prompt, then decodes one token at a time, recording for every step the number of
cached tokens each layer holds before the step (what the step's attention reads besides its own
key). The JSON it prints is tests/fixtures/hf_sliding_cache.json, which
tests/test_calc_inference_latency.py compares with calc_inference_latency.py's window rules.
Needs torch and transformers (not dependencies of the scripts); CPU, a few seconds.

  python benchmarks/hf_sliding_cache.py > tests/fixtures/hf_sliding_cache.json
"""
import json

import torch
import transformers
from transformers import Gemma2Config, Gemma2ForCausalLM, MistralConfig, MistralForCausalLM

WINDOW, PROMPT, STEPS = 8, 5, 12
SMALL = dict(vocab_size=100, hidden_size=64, intermediate_size=128, num_attention_heads=4,
             num_key_value_heads=2, head_dim=16, sliding_window=WINDOW, max_position_embeddings=256)


def trace(model):
    """Per decode step: context c before it and each layer's cached token count at that point."""
    torch.manual_seed(0)
    ids = torch.randint(0, 100, (1, PROMPT))
    with torch.no_grad():
        out = model(ids, use_cache=True)
        cache, steps = out.past_key_values, []
        for j in range(STEPS):
            steps.append({"context": PROMPT + j,
                          "cached": [int(layer.keys.shape[-2]) for layer in cache.layers]})
            nxt = out.logits[:, -1:].argmax(-1)
            out = model(nxt, past_key_values=cache, use_cache=True)
            cache = out.past_key_values
    return {"layer_classes": [type(layer).__name__ for layer in cache.layers], "steps": steps}


def main():
    mistral = MistralForCausalLM(MistralConfig(num_hidden_layers=2, **SMALL)).eval()
    gemma2 = Gemma2ForCausalLM(Gemma2Config(num_hidden_layers=4, **SMALL)).eval()
    print(json.dumps({"transformers": transformers.__version__, "torch": torch.__version__,
                      "window": WINDOW, "prompt": PROMPT,
                      "mistral": trace(mistral), "gemma2": trace(gemma2)}, indent=1))


if __name__ == "__main__":
    main()
