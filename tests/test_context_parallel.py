"""Context parallelism's modes (issue 33): what --cp-comm-type accepts and refuses, and that each mode
charges what Transformer Engine's implementation runs (train/context_parallel.py names the source).
No published run states --cp-comm-type a2a; the validation rows (tests/test_training_today.py) all
run the p2p ring, Megatron-Core's default."""
import os

from conftest import ROOT, exit_code_and_stderr, run_main
import calc_training_time as T

LLAMA_8B = ["--hf_model_name_or_path", os.path.join(ROOT, "tests", "fixtures", "configs", "llama-3.1-8b.json"),
            "--gpu", "h100", "--global-batch-size", "8"]


def test_a2a_refuses_heads_that_do_not_split_over_cp():
    # Llama 3.1 8B: 8 KV heads cannot split over cp 16 (TE asserts heads % cp == 0 for Q and K/V)
    code, err = exit_code_and_stderr(T.main, LLAMA_8B + ["--num-gpus", "16", "-cp", "16", "-s", "65536",
                                                         "--cp-comm-type", "a2a"])
    assert code == 2
    assert "--cp-comm-type a2a" in err and "-cp 16" in err and len(err.strip().splitlines()) == 1


def test_a2a_refuses_search():
    code, err = exit_code_and_stderr(T.main, LLAMA_8B + ["--num-gpus", "16", "-cp", "2", "-s", "65536",
                                                         "--cp-comm-type", "a2a", "--search"])
    assert code == 2
    assert "--search" in err and len(err.strip().splitlines()) == 1


def test_modes_charge_their_own_exchanges():
    # p2p: the ring hides behind the per-chunk kernels inside a node (little exposed); a2a: the
    # all-to-alls are exposed and there are no ring merges, so its copies cost less than the ring's
    argv = LLAMA_8B + ["--num-gpus", "8", "-cp", "4", "-tp", "2", "-s", "65536", "--json"]
    p2p, _, _ = run_main(T.main, argv)
    a2a, _, _ = run_main(T.main, argv + ["--cp-comm-type", "a2a"])
    bp, ba = p2p["breakdown_s"], a2a["breakdown_s"]
    assert ba["exposed_cp_comm"] > bp["exposed_cp_comm"]
    assert ba["compute_cp_kernels"] < bp["compute_cp_kernels"]


def test_ring_that_spans_nodes_pays_the_network_hop():
    # TE's ring sends to the next rank of the cp group (send_dst = cp_global_ranks[(r + 1) % cp],
    # AttnFuncWithCPAndKVP2P) and each step waits on its receive; Megatron-Core orders ranks tp-cp-dp,
    # so at TP 4 CP 4 the group spans 16 GPUs and two of its four hops cross an 8-GPU node's boundary.
    # The same layout inside one 16-GPU NVLink domain keeps every hop on NVLink.
    argv = LLAMA_8B + ["--num-gpus", "16", "-tp", "4", "-cp", "4", "-s", "131072", "--json"]
    two_nodes, _, _ = run_main(T.main, argv)
    one_domain, _, _ = run_main(T.main, argv + ["--gpus-per-node", "16"])
    assert two_nodes["breakdown_s"]["exposed_cp_comm"] > 2 * one_domain["breakdown_s"]["exposed_cp_comm"]
