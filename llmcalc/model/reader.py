"""ConfigReader reads a config one field at a time, checking each field's type and range and
naming the field and the file in its one-line error; the fields it did not read that could change
a count become warnings. Also the layer_types pattern every family may state."""

from ..errors import CalcError
from .hub import _short


# Fields whose presence can change a count; an unread one becomes a warning in the result.
_COUNT_FIELD_HINTS = tuple("expert moe lora_rank head_dim intermediate num_hidden_layers "
                           "num_attention_heads key_value vocab hidden_size sliding window chunk "
                           "layer_types dense shared nextn mtp index_ sink gate per_layer kv_ "
                           "_layers ffn n_embd n_head n_layer".split())
_NEVER_COUNTS = set("max_position_embeddings num_labels use_cache output_router_logits "
                    "router_aux_loss_coef router_jitter_noise moe_aux_loss_coef aux_loss_alpha "
                    "seq_aux norm_topk_prob routed_scaling_factor topk_group n_group topk_method "
                    "scoring_func router_z_loss_coef moe_router_enable_expert_bias moe_capacity "
                    "moe_gate hidden_act hidden_activation mlp_only_layers_ initializer_range "
                    "use_sliding_window max_window_layers sliding_window_pattern "
                    "_sliding_window_pattern mlp_layer_types rope_interleave moe_norm_topk_prob "
                    "first_k_dense_replace router_temperature layer_norm_eps rms_norm_eps head_dim "
                    "gate_type final_logit_softcapping attn_logit_softcapping "
                    "query_pre_attn_scalar expert_capacity num_nextn_predict_layers moe_k "
                    "moe_num_experts moe_intermediate_size use_qk_norm interleave_moe_layer_step "
                    "moe_layer_freq decoder_sparse_step".split())


# The largest value ConfigReader accepts in a config field (a call's hi= wins): far past any real
# model, small enough that no count overflows into nonsense. Unlisted fields (widths, vocabularies,
# token counts) may hold up to 2^31, numbers read with num() up to 1e12.
_FIELD_MAX = {
    **dict.fromkeys((  # heads, head and state dims, experts, top-k, groups, chunk lengths
        "num_attention_heads n_head num_heads num_key_value_heads num_kv_heads num_attention_groups "
        "num_global_key_value_heads num_sliding_attention_heads head_dim global_head_dim "
        "qk_nope_head_dim qk_rope_head_dim v_head_dim index_n_heads index_head_dim num_local_experts "
        "num_experts n_routed_experts moe_num_experts num_shared_experts n_shared_experts "
        "moe_num_shared_experts zero_expert_num num_experts_per_tok num_experts_per_token moe_top_k "
        "top_k_experts moe_k moe_topk linear_num_key_heads linear_num_value_heads linear_key_head_dim "
        "linear_value_head_dim linear_num_heads linear_head_dim mamba_num_heads mamba_n_heads "
        "mamba_head_dim mamba_dt_rank mamba_d_state ssm_state_size n_groups mamba_n_groups chunk_size "
        "mamba_chunk_size hidden_size_per_layer_input compress_rate_csa compress_rate_hca o_groups "
        "compress_ratios group_size q_group_size weight_block_size").split(), 2**20),
    **dict.fromkeys((  # layer counts, layer indices and layer-pattern periods
        "num_hidden_layers n_layer num_layers first_k_dense_replace moe_layer_freq decoder_sparse_step "
        "interleave_moe_layer_step moe_layer_start_index moe_layer_end_index moe_layer_interval "
        "num_hash_layers num_kv_shared_layers max_window_layers full_attention_interval "
        "no_rope_layer_interval sliding_window_pattern _sliding_window_pattern attn_layer_period "
        "attn_layer_offset expert_layer_period expert_layer_offset index_topk_freq "
        "index_skip_topk_offset mlp_only_layers moe_layers kv_source_layers").split(), 100_000),
    **dict.fromkeys(("hidden_size n_embd n_embed d_model word_embed_proj_dim q_lora_rank kv_lora_rank "
                     "o_lora_rank moe_latent_size").split(), 2**24),
    **dict.fromkeys("conv_kernel linear_conv_kernel_dim mamba_d_conv conv_L_cache short_conv_kernel_size".split(),
                    4096),
    **dict.fromkeys("num_nextn_predict_layers num_mtp_layers mtp_num_layers mtp_num_hidden_layers".split(), 1000),
    "mamba_expand": 1e6,
}


class ConfigReader:
    """Typed, range-checked access to one config dict. Every field is checked as it is read (an
    integer where a count is meant, a boolean where a switch is meant, a finite number where a
    size is meant, at most its _FIELD_MAX); an error is one line naming the field and the file.
    Past the reader, the code can assume clean numbers. `used` records which fields were read."""

    def __init__(self, cfg, where, warnings_out=None):
        self.cfg, self.where, self.used = cfg, where, set()
        self.warnings_out = [] if warnings_out is None else warnings_out

    def fail(self, key, what, value):
        raise CalcError(f"{self.where}: field {key!r} {what}, got {_short(value)}")

    def has(self, key):
        return self.cfg.get(key) is not None

    def pick(self, *keys):
        """(key, value) of the first given non-null key; two given spellings that disagree are an
        error naming both."""
        self.used.update(keys)
        found = [(k, self.cfg[k]) for k in keys if self.cfg.get(k) is not None]
        if not found:
            return None, None
        k0, v0 = found[0]
        for k, v in found[1:]:
            if v != v0:
                raise CalcError(f"{self.where}: fields {k0!r} ({_short(v0)}) and {k!r} ({_short(v)}) "
                                 "disagree; keep one")
        return k0, v0

    def int(self, *keys, default=None, lo=1, hi=None):
        k, v = self.pick(*keys)
        if k is None:
            return default
        hi = _FIELD_MAX.get(k, 2**31) if hi is None else hi
        if isinstance(v, bool) or not isinstance(v, int):
            self.fail(k, "must be an integer", v)
        if not lo <= v <= hi:
            self.fail(k, f"must be between {lo:,} and {hi:,}", v)
        return v

    def num(self, *keys, default=None, lo=0.0, hi=None):
        k, v = self.pick(*keys)
        if k is None:
            return default
        hi = _FIELD_MAX.get(k, 1e12) if hi is None else hi
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or not lo <= v <= hi:
            self.fail(k, f"must be a finite number between {lo:g} and {hi:g}", v)
        return v

    def bool(self, *keys, default=None):
        k, v = self.pick(*keys)
        if k is None:
            return default
        if not isinstance(v, bool):
            self.fail(k, "must be true or false", v)
        return v

    def str(self, *keys, default=None, choices=None):
        k, v = self.pick(*keys)
        if k is None:
            return default
        if not isinstance(v, str) or (choices is not None and v not in choices):
            self.fail(k, "must be " + (f"one of {', '.join(choices)}" if choices else "a string"), v)
        return v

    def int_list(self, key, *, lo=0, hi=None, length=None, default=None):
        k, v = self.pick(key)
        if k is None:
            return default
        hi = _FIELD_MAX.get(k, 2**31) if hi is None else hi
        if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int) or not lo <= x <= hi
                                          for x in v):
            self.fail(k, f"must be a list of integers between {lo} and {hi:,}", v)
        if length is not None and len(v) != length:
            self.fail(k, f"must list {length} values", v)
        return list(v)

    def str_list(self, key, *, choices, length=None, default=None):
        k, v = self.pick(key)
        if k is None:
            return default
        if not isinstance(v, list) or any(not isinstance(x, str) for x in v):
            self.fail(k, "must be a list of strings", v)
        bad = sorted({x for x in v if x not in choices})
        if bad:
            self.fail(k, f"has layer kinds this script does not know ({', '.join(bad)}); known: "
                      + ", ".join(sorted(choices)), v)
        if length is not None and len(v) < length:
            self.fail(k, f"lists {len(v)} layers, fewer than the {length} needed", v)
        return list(v[:length] if length is not None else v)

    def sub(self, key):
        """A nested config dict (text_config, quantization_config, rope_parameters), or None."""
        k, v = self.pick(key)
        if k is None:
            return None
        if not isinstance(v, dict):
            self.fail(k, "must be a JSON object", v)
        return v

    def unread_count_fields(self):
        """Fields present in the config, never read, whose name suggests they change a count."""
        out = []
        for key, val in self.cfg.items():
            if key in self.used or key in _NEVER_COUNTS or key.startswith("_") or val in (None, False, 0, [], {}):
                continue
            if any(hint in key for hint in _COUNT_FIELD_HINTS) and not key.endswith(("_eps", "_dropout")):
                out.append(key)
        return sorted(out)


_LAYER_TYPE_NAMES = {"full_attention": "full", "sliding_attention": "sliding",
                     "chunked_attention": "chunked", "attention": "full", "linear_attention": "linear"}


def _layer_pattern(r, L, s):
    """Per-layer attention span list (full/sliding/chunked) from transformers 5's layer_types, or
    None when every layer is alike."""
    names = dict(_LAYER_TYPE_NAMES)
    if not s.get("linear_mixer"):
        del names["linear_attention"]  # only a family whose reader knows its linear layers has them
    lt = r.str_list("layer_types", choices=set(names), length=L)
    if lt is None:
        return None
    return [names[t] for t in lt]
