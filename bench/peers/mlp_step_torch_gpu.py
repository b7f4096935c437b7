"""The GPU peer of bench/device_train_step.cu: one training step of the MLP
784-256-128-10 (ReLU), or with --model cnn the Fashion-MNIST example's CNN
(channels_last, as tenet's NHWC), at batch 256 in PyTorch -- eager with AMP (fp16
autocast + GradScaler, and bf16 autocast) and torch.compile of the same
step -- with fused AdamW(lr 1e-3), softmax cross-entropy. Median step time
over 5 runs of 200 steps after 20 warm-up steps, one JSON line per mode.
Needs a CUDA device; prints "skipped" otherwise.
"""
import argparse
import json
import statistics

import torch

BATCH = 256


MODEL = "mlp"


def make():
    nn = torch.nn
    if MODEL == "cnn":
        model = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.BatchNorm2d(32), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.BatchNorm2d(64), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Dropout(0.25), nn.Linear(3136, 128), nn.ReLU(),
                              nn.Linear(128, 10)).cuda().to(memory_format=torch.channels_last)
    else:
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
    return model, opt


def bench(name, step):
    if MODEL == "cnn":
        x = torch.randn(BATCH, 1, 28, 28, device="cuda").contiguous(memory_format=torch.channels_last)
    else:
        x = torch.randn(BATCH, 784, device="cuda")
    y = torch.randint(0, 10, (BATCH,), device="cuda")
    for _ in range(20):
        step(x, y)
    torch.cuda.synchronize()
    times = []
    for _ in range(5):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(200):
            step(x, y)
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 200)
    us = statistics.median(times) * 1e3
    print(json.dumps({"framework": "torch", "model": MODEL, "mode": name, "step_us": round(us, 2),
                      "samples_per_s": round(BATCH / (us * 1e-6))}))


def main():
    global MODEL
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    MODEL = parser.parse_args().model
    if not torch.cuda.is_available():
        print("skipped: no CUDA device")
        return
    for dtype, label in ((torch.float16, "eager-amp-fp16"), (torch.bfloat16, "eager-amp-bf16")):
        model, opt = make()
        scaler = torch.amp.GradScaler(enabled=dtype == torch.float16)

        def step(x, y, model=model, opt=opt, scaler=scaler, dtype=dtype):
            with torch.autocast("cuda", dtype=dtype):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()

        bench(label, step)
    model, opt = make()

    @torch.compile
    def compiled(x, y):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        return loss

    def step(x, y):
        opt.zero_grad(set_to_none=True)
        compiled(x, y)
        opt.step()

    bench("compile-bf16", step)


if __name__ == "__main__":
    main()
