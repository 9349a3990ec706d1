"""The program being profiled: `Program`, the switches for each mistake and its fix, and the shape of the
network it trains (image size, convolutions, the loss's frame)."""

from __future__ import annotations

import dataclasses

@dataclasses.dataclass
class Program:
    device: str = "a100"
    precision: str = "bf16"
    num_workers: int = 4
    pin_memory: bool = True
    loss: str = "buffer"          # buffer | tensor_every_step | module_every_step | module_once
    label_check: str = "none"     # none | assert_item | assert_async
    pick: str = "none"            # none | python_range | arange  (pred[range(n), target] vs torch.arange)
    set_to_none: bool = True
    non_blocking: bool = True     # images.to("cuda", non_blocking=...)
    optimizer: str = "foreach"    # foreach | single_tensor  (SGD(foreach=False))
    conv_bias: bool = False       # nn.Conv2d(..., bias=True) before nn.BatchNorm2d
    empty_cache: bool = False     # torch.cuda.empty_cache() at the end of every step
    launch_blocking: bool = False  # CUDA_LAUNCH_BLOCKING=1 left in the environment
    classes: int = 1000
    batch: int = 64
    head: str = "pool"            # pool: avgpool + Linear(512, classes) | mlp: Linear(8192, 4096) + Linear(4096, classes)
    resident_gb: float = 2.95     # GPU memory held outside the step (weights, optimizer state, other tensors)
    profile_from_start: bool = False  # schedule without wait/warmup: step 0 (lazy loading, allocator growth) recorded
    detect_anomaly: bool = False  # torch.autograd.set_detect_anomaly(True) left on
    preprocess: str = "workers"   # workers | main_thread: the batch normalised and resized on the training thread
    log_loss: bool = False        # running_loss += loss.item() at the end of every step


IMAGE = (3, 128, 128)
IMAGE_BYTES_PER_SAMPLE = IMAGE[0] * IMAGE[1] * IMAGE[2] * 4

# (in_channels, out_channels, kernel, input H=W, output H=W, bf16 fprop µs on an A100, followed by max pool)
CONVS = [
    (3, 64, 7, 128, 64, 180.0, True),
    (64, 128, 3, 32, 32, 250.0, False),
    (128, 256, 3, 32, 16, 220.0, False),
    (256, 512, 3, 16, 8, 200.0, False),
]
# The loss classes of each variant: (python frame of its forward, module class name).
LOSS_FRAMES = {
    "buffer": "train.py(18): forward",
    "tensor_every_step": "train.py(18): forward",
    "module_every_step": "train.py(18): forward",
    "module_once": "train.py(18): forward",
}
