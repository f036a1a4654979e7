"""Published nccl-tests all_reduce_perf output tables (out-of-place columns), as
(size_bytes, time_us, busbw_GBps). Typed from the sources named; nothing here is ours."""

# NVIDIA/dgxc-benchmarking, nccl/README.md (commit 46e420155bec6e791fd720f1ce7430781271d5e6),
# "View sample output (AllReduce excerpt)": one DGX H100 node (pool0-01806), 8 x H100 80GB HBM3,
# NVSwitch with NVLink SHARP, 1 GPU per process, float sum, 8 B - 16 GiB.
# https://github.com/NVIDIA/dgxc-benchmarking/blob/46e420155bec6e791fd720f1ce7430781271d5e6/nccl/README.md
H100_DGX_8GPU = [
    (8, 13.67, 0.00), (16, 13.00, 0.00), (32, 68.14, 0.00), (64, 14.92, 0.01),
    (128, 15.87, 0.01), (256, 16.10, 0.03), (512, 16.70, 0.05), (1024, 16.94, 0.11),
    (2048, 17.14, 0.21), (4096, 23.59, 0.30), (8192, 17.40, 0.82), (16384, 17.93, 1.60),
    (32768, 19.33, 2.97), (65536, 19.54, 5.87), (131072, 19.89, 11.53), (262144, 20.43, 22.45),
    (524288, 20.66, 44.41), (1048576, 27.37, 67.04), (2097152, 42.21, 86.94),
    (4194304, 54.19, 135.44), (8388608, 83.04, 176.77), (16777216, 123.8, 237.21),
    (33554432, 199.3, 294.69), (67108864, 324.7, 361.67), (134217728, 586.4, 400.53),
    (268435456, 1112.5, 422.25), (536870912, 2151.0, 436.79), (1073741824, 4029.4, 466.33),
    (2147483648, 7939.1, 473.37), (4294967296, 15749, 477.24), (8589934592, 31307, 480.16),
    (17179869184, 62648, 479.90),
]

# aws-samples/awsome-distributed-training, 1.architectures/3.aws-batch/README.md, step 4 log:
# one p5.48xlarge (8 x H100 SXM, NVSwitch), AWS Batch job, float sum, 8 B - 16 GiB (large rows).
# https://github.com/aws-samples/awsome-distributed-training/blob/main/1.architectures/3.aws-batch/README.md
H100_P5_8GPU_LARGE = [
    (1073741824, 4253.0, 441.81), (2147483648, 8463.7, 444.02), (4294967296, 15791, 475.97),
    (8589934592, 31289, 480.43), (17179869184, 62239, 483.05),
]

# "AML_NCCL_Test" README (Azure Machine Learning, NDmV4: 8 x A100 80GB SXM, NVSwitch, 8 x 200 Gb/s
# HDR InfiniBand per node), section "NCCL all_reduce Results / Single Node". Stored in the project
# search index as file id 15980217010 (its repository path was not recoverable from the index).
A100_AZURE_8GPU = [
    (8, 18.75, 0.00), (16, 17.94, 0.00), (32, 18.08, 0.00), (64, 17.92, 0.01), (128, 17.92, 0.01),
    (256, 18.65, 0.02), (512, 19.54, 0.05), (1024, 20.35, 0.09), (2048, 21.65, 0.17),
    (4096, 23.22, 0.31), (8192, 24.43, 0.59), (16384, 25.70, 1.12), (32768, 29.24, 1.96),
    (65536, 28.32, 4.05), (131072, 29.05, 7.90), (262144, 28.98, 15.83), (524288, 30.23, 30.36),
    (1048576, 37.33, 49.15), (2097152, 63.11, 58.16), (4194304, 84.77, 86.59),
    (8388608, 131.1, 111.97), (16777216, 220.5, 133.14), (33554432, 353.9, 165.94),
    (67108864, 579.2, 202.78), (134217728, 1157.6, 202.90), (268435456, 2169.8, 216.50),
    (536870912, 4204.0, 223.48), (1073741824, 8212.6, 228.80), (2147483648, 16274, 230.93),
    (4294967296, 32200, 233.42), (8589934592, 64200, 234.15),
]

# Same README, "Two Nodes": 16 x A100 80GB on 2 NDmV4 nodes (8 x 200 Gb/s HDR each).
A100_AZURE_16GPU_2NODES = [
    (8, 37.76, 0.00), (1048576, 96.57, 20.36), (16777216, 332.4, 94.65),
    (268435456, 2975.4, 169.16), (1073741824, 11080, 181.70), (2147483648, 21872, 184.10),
    (4294967296, 43176, 186.52), (8589934592, 85820, 187.67),
]

# oracle-japan/ocitutorials, GPU-cluster tutorial (Horovod container, section 4-2): one
# BM.GPU4.8 node, 8 x A100-SXM4-40GB, NVSwitch, all_reduce_perf -b 64 -e 10G -f 2 -t 1 -g 8.
# Stored in the project search index as file id 7310580171 (likely tutorials/_hpc/spinup-gpu-cluster.md, older revision; not confirmed).
A100_OCI_8GPU = [
    (64, 32.01, 0.00), (1024, 32.03, 0.06), (65536, 35.40, 3.24), (1048576, 76.71, 23.92),
    (16777216, 245.1, 119.81), (268435456, 2121.9, 221.38), (1073741824, 8166.8, 230.08),
    (2147483648, 16232, 231.52), (4294967296, 32097, 234.17), (8589934592, 63929, 235.14),
]

# oracle-japan/ocitutorials, tutorials/_hpc/benchmark/run-nccltests-h100.md: 2 x BM.GPU.H100.8
# (16 x H100 80GB HBM3; 16 x 200 Gb/s RoCE ports per node = 400 GB/s = 50 GB/s per GPU), NCCL 2.21.5,
# all_reduce_perf -b 1G -e 16G -f 2.
# https://github.com/oracle-japan/ocitutorials/blob/master/tutorials/_hpc/benchmark/run-nccltests-h100.md
H100_OCI_16GPU_2NODES = [
    (1073741824, 4511.2, 446.28), (2147483648, 8825.9, 456.22), (4294967296, 17437, 461.83),
    (8589934592, 34719, 463.90), (17179869184, 69338, 464.57),
]
