"""A training layout: how one job runs on its GPUs (parallel sizes, pipeline split, ZeRO stage,
batch, recompute, offloads, the stack's kernels and execution knobs), declared once. Built by
calc_training_time.py from its flags (tools/training_time.layout_base) and extended with
Layout.replace by the search (train/search.py), which tries other values, and by the step model
(train/step.py), which adds the model's residual streams and norm for the per-layer costs."""

from ..records import Record


class Layout(Record):
    """One training layout; every count per job unless it says per GPU or per replica."""

    FIELDS = {
        "num_gpus": "GPUs in the job", "tp": "tensor-parallel size", "pp": "pipeline stages",
        "vp": "model chunks per pipeline rank (interleaved 1F1B)", "cp": "context-parallel size",
        "cp_comm_type": "context parallelism's exchange: p2p (the K/V ring) or a2a",
        "ep": "expert-parallel size", "etp": "tensor-parallel size inside each expert",
        "dp": "data-parallel size (complete_layout)",
        "sp": "Megatron sequence parallelism (with tp > 1)", "zero_stage": "ZeRO stage 0-3",
        "sequence_length": "tokens per sequence", "global_batch_size": "sequences per step",
        "micro_batch_size": "sequences per micro-batch per replica",
        "num_microbatches": "micro-batches per step per replica (complete_layout)",
        "recompute": "activation recompute: none, selective, full or op-sac",
        "recompute_modules": "selective recompute's modules (None: the default core_attn)",
        "recompute_every": "recompute on one layer in k (1: every layer)",
        "offload": "optimizer states on the host (ZeRO-Offload)",
        "offload_params": "the layers' 16-bit weights in host memory (ZeRO-Infinity style)",
        "offload_activations": "stored activations in host memory",
        "offload_device": "where --offload's states live under DeepSpeed: cpu or nvme",
        "offload_param": "DeepSpeed ZeRO-3 offload_param's device (cpu, nvme) or None",
        "nvme_bytes_per_s": "NVMe bandwidth per GPU for DeepSpeed's NVMe offload, or None",
        "flash_attention": "a fused attention kernel (else eager matmuls and softmax)",
        "attention_kernel": "the fused kernel whose measured rates apply (fa2, cudnn, cudnn-9.1)",
        "dropout": "dropout after attention and each block",
        "tp_comm_overlap": "TP collectives hidden behind matmuls: none, backward or full",
        "dp_overlap": "gradient reduction bucketed under the last backward",
        "dp_bucket_params": "gradient bucket, parameters",
        "moe_imbalance": "busiest expert rank's tokens over the mean",
        "moe_dispatcher": "MoE token dispatch: alltoall or flex (DeepEP)",
        "moe_a2a_overlap": "Megatron-Core's EP all-to-all overlap across micro-batches",
        "overlap_slowdown": "compute slowdown while a collective overlaps it",
        "gpus_per_node": "GPUs of the job sharing one scale-up domain",
        "matmul_bytes": "bytes per matmul operand: 2 (bf16/fp16) or 1 (fp8)",
        "grad_bytes": "bytes per gradient as accumulated and reduced",
        "precision16": "the 16-bit format: bf16 or fp16 (fp16 adds loss scaling)",
        "fp8_recipe": "fp8 scaling recipe (torchao's or Transformer Engine's), or None",
        "framework": "the training stack whose kernels are costed",
        "compile": "torch.compile'd blocks (--framework pytorch)",
        "decoder_first_pipeline_num_layers": "Megatron-LM's layers on the first stage, or None",
        "decoder_last_pipeline_num_layers": "Megatron-LM's layers on the last stage, or None",
        "account_for_embedding_in_pipeline_split": "the embedding counted as a layer of the split",
        "account_for_loss_in_pipeline_split": "the head and loss counted as a layer of the split",
        "residual_streams": "the model's residual streams (DeepSeek-V4's hyper-connections: hc)",
        "norm": "the model's norm (rmsnorm, layernorm), for the per-layer costs",
        "finetune": "peft on a frozen base: lora or qlora, None for full training",
        "lora_rank": "LoRA rank r (0 for full training)",
        "lora_targets": "the adapted matrices, a tuple of q k v o gate up down",
        "trainable_params": "parameters with gradients per rank (LoRA's adapters), None: all",
        "attn_implementation": "transformers' attention implementation, None: the fused kernel",
        "pure16": "pure 16-bit training: no autocast, no fp32 copies (torch.optim in bf16)",
        "optimizer": "the optimizer whose states the memory counts (memory.OPTIMIZER_STATE_BYTES)",
        "optimizer_impl": "torch AdamW's step: fused (the Trainer's default) or foreach",
        "padded_batches": "batches padded to their longest sequence (sdpa given a mask)",
        "lora_dropout": "peft's lora_dropout (its mask and copies in the memory), 0.0: none",
    }

    def replace(self, **changes):
        """A copy with `changes` (each checked as declared; the rest already was): how the
        search tries a value and the step model adds the model's fields."""
        if not changes.keys() <= self.FIELDS.keys():
            Layout(changes)  # raises TypeError naming the undeclared field
        new = dict.__new__(type(self))
        dict.update(new, self)
        dict.update(new, changes)
        return new


def complete_layout(lay):
    """Derived fields: dp and the number of micro-batches per step."""
    dp = lay["num_gpus"] // (lay["tp"] * lay["pp"] * lay["cp"])
    m = lay["global_batch_size"] // (lay["micro_batch_size"] * dp)
    return (lay if isinstance(lay, Layout) else Layout(lay)).replace(dp=dp, num_microbatches=m)
