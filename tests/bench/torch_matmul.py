"""PyTorch CUDA baseline for `kernels --backend webgpu`: torch.matmul in fp32.

Square n x n products, plain (A @ B) and transposed (A @ B^T, B stored
[n, k]), on random normal data, with TF32 off (full fp32, cuBLAS SGEMM)
and on (the tensor cores' reduced-precision fp32 mode), timed with CUDA
events over repeated products after a warm-up. Prints one JSON object.

    python3 tests/bench/torch_matmul.py --sizes 1024,4096
"""

import argparse
import json

import torch


def time_product(a: torch.Tensor, b: torch.Tensor, seconds: float) -> float:
    """Seconds per product, median of 5 samples of about `seconds` each."""
    for _ in range(3):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.matmul(a, b)
    end.record()
    end.synchronize()
    reps = max(1, min(1000, int(seconds / (start.elapsed_time(end) / 1000))))
    samples = []
    for _ in range(5):
        start.record()
        for _ in range(reps):
            torch.matmul(a, b)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 1000 / reps)
    return sorted(samples)[len(samples) // 2]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1024,2048,4096,8192")
    p.add_argument("--sample-seconds", type=float, default=0.2)
    a = p.parse_args()
    torch.manual_seed(1)
    cases = []
    for n in (int(s) for s in a.sizes.split(",")):
        x = torch.randn(n, n, device="cuda")
        y = torch.randn(n, n, device="cuda")
        for layout, b in (("plain", y), ("transposed", y.t())):
            for tf32 in (False, True):
                torch.backends.cuda.matmul.allow_tf32 = tf32
                s = time_product(x, b, a.sample_seconds)
                cases.append({
                    "n": n, "layout": layout, "tf32": tf32,
                    "seconds": s, "gflops": 2 * n**3 / s / 1e9,
                })
    props = torch.cuda.get_device_properties(0)
    print(json.dumps({
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0),
        "multiprocessors": props.multi_processor_count,
        "cases": cases,
    }))


if __name__ == "__main__":
    main()
