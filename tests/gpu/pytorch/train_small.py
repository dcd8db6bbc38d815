"""A small PyTorch training loop for issue 16: run natively and through AgileOS, the losses must
agree and the step times are compared (tests/gpu/pytorch/run_pytorch.sh).

An MLP plus a convolution layer, Adam, deterministic cuDNN and deterministic algorithms, on
synthetic data made on the CPU from a fixed seed, so that both runs see the same numbers and do
the same arithmetic. Writes one JSON object: the loss of every step, the step times (each step
ends with a synchronize) and what ran. With --fft, only a check of torch.fft (cuFFT) against the
CPU, in a process of its own so that its failure cannot take the training loop with it.

Usage: python train_small.py [--steps N] [--out FILE] [--fft]
"""
import argparse
import json
import os
import statistics
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS

import torch  # noqa: E402  (after the environment it reads)


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 16, kernel_size=3, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc1 = torch.nn.Linear(16 * 16 * 16, 128)
        self.fc2 = torch.nn.Linear(128, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv(x)))
        x = torch.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def fft_check(device, generator):
    """torch.fft through cuFFT (cufftXtMakePlanMany and cufftXtExec): real, complex and double
    transforms of a fixed signal, each against torch's CPU FFT. Returns the transforms' sums (the
    same numbers natively and through AgileOS) and the largest relative error, or the error text:
    a failure here is reported on its own, never as a failure of the training loop."""
    try:
        signal = torch.randn(4, 1000, generator=generator)
        cases = {
            "rfft_f32": lambda t: torch.fft.rfft(t),
            "fft_ifft_c64": lambda t: torch.fft.ifft(torch.fft.fft(t.to(torch.complex64), norm="ortho")),
            "fft2_f64": lambda t: torch.fft.fft2(t.double()),
            "irfft_f32": lambda t: torch.fft.irfft(torch.fft.rfft(t), n=1000),
        }
        sums, worst = {}, 0.0
        for name, transform in cases.items():
            got = transform(signal.to(device)).cpu()
            want = transform(signal)
            scale = max(1e-30, want.abs().max().item())
            worst = max(worst, (got - want).abs().max().item() / scale)
            sums[name] = round(got.abs().sum().item(), 3)
        return {"sums": sums, "max_relative_error_vs_cpu": worst}
    except Exception as error:  # reported by the suite as the FFT check's failure
        return {"error": f"{type(error).__name__}: {error}"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--out", default="-")
    parser.add_argument("--fft", action="store_true", help="only the torch.fft check (a process of its own)")
    args = parser.parse_args()
    if args.fft:
        print(json.dumps({"fft": fft_check(torch.device("cuda"), torch.Generator().manual_seed(99))}))
        return

    torch.manual_seed(0)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(True)
    device = torch.device("cuda")

    generator = torch.Generator().manual_seed(1234)
    inputs = torch.randn(8, 64, 3, 32, 32, generator=generator)
    labels = torch.randint(0, 10, (8, 64), generator=generator)
    inputs, labels = inputs.to(device), labels.to(device)

    model = Model().to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_function = torch.nn.CrossEntropyLoss()

    losses, step_ms = [], []
    for step in range(args.steps):
        start = time.perf_counter()
        batch = step % inputs.shape[0]
        optimizer.zero_grad(set_to_none=True)
        loss = loss_function(model(inputs[batch]), labels[batch])
        loss.backward()
        optimizer.step()
        losses.append(loss.item())  # synchronizes
        step_ms.append((time.perf_counter() - start) * 1e3)

    timed = sorted(step_ms[20:]) or sorted(step_ms)
    result = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "device": torch.cuda.get_device_name(0),
        "steps": args.steps,
        "losses": losses,
        "step_ms_p50": statistics.median(timed),
        "step_ms_p99": timed[min(len(timed) - 1, int(0.99 * len(timed)))],
    }
    text = json.dumps(result)
    if args.out == "-":
        print(text)
    else:
        with open(args.out, "w") as out:
            out.write(text + "\n")
    print(f"train_small: {args.steps} steps, final loss {losses[-1]:.6f}, "
          f"step p50 {result['step_ms_p50']:.3f} ms", file=sys.stderr)


if __name__ == "__main__":
    main()
