"""PyTorch's twin of bench/bench_dataloader.cpp: images per second through torch's DataLoader
decoding JPEGs with PIL on the fly, for num_workers 0, 1, 2, without and with augmentation.

Per sample, as a torchvision training script does it:
  PIL.Image.open -> draft (libjpeg's DCT downscaling, which ember's decoder uses too) -> RGB ->
  resize to --size x --size with the box (area) filter -> uint8 tensor [3, H, W] ->
  [RandomCrop(--crop, padding=4) -> RandomHorizontalFlip()] -> float / 255
then the default collate stacks --batch samples. Workers are processes (PyTorch's design), kept
across epochs (persistent_workers=True, its best setting for repeated epochs).

  /usr/bin/python3 bench/pytorch/bench_dataloader.py --dir DIR [--batch 64] [--size 64]
                                                    [--crop 56] [--workers 0,1,2] [--epochs 3]

DIR is the folder bench_dataloader generated (it prints its path) or any ImageFolder layout.
A row's time is the median of --epochs epochs after one warm-up epoch.
"""
import argparse
import os
import statistics
import time

import numpy as np
import torch
from PIL import Image
from torch.utils.data import DataLoader, Dataset

try:
    import torchvision.transforms as T
except ImportError:  # without torchvision: the same crop and flip by hand
    T = None


class RandomCropFlip:
    """RandomCrop(crop, padding=4) then RandomHorizontalFlip(0.5) on a uint8 tensor [C, H, W]."""

    def __init__(self, crop):
        self.crop = crop

    def __call__(self, x):
        if T is not None:
            x = T.RandomCrop(self.crop, padding=4)(x)
            return T.RandomHorizontalFlip()(x)
        x = torch.nn.functional.pad(x, (4, 4, 4, 4))
        top = int(torch.randint(0, x.shape[1] - self.crop + 1, ()))
        left = int(torch.randint(0, x.shape[2] - self.crop + 1, ()))
        x = x[:, top:top + self.crop, left:left + self.crop]
        return x.flip(2) if torch.rand(()) < 0.5 else x


class LazyFolder(Dataset):
    """torchvision's ImageFolder order: classes sorted, files sorted; decoded on every get."""

    def __init__(self, root, size, augment):
        self.size, self.augment = size, augment
        classes = sorted(d for d in os.listdir(root)
                         if not d.startswith(".") and os.path.isdir(os.path.join(root, d)))
        self.samples = []
        for label, c in enumerate(classes):
            for f in sorted(os.listdir(os.path.join(root, c))):
                if not f.startswith("."):
                    self.samples.append((os.path.join(root, c, f), label))

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, label = self.samples[i]
        with Image.open(path) as img:
            img.draft("RGB", (self.size, self.size))
            img = img.convert("RGB").resize((self.size, self.size), Image.BOX)
            x = torch.from_numpy(np.array(img)).permute(2, 0, 1)
        if self.augment is not None:
            x = self.augment(x)
        return x.float() / 255, label


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dir", required=True)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--crop", type=int, default=56)
    p.add_argument("--workers", default="0,1,2")
    p.add_argument("--epochs", type=int, default=3)
    a = p.parse_args()
    print(f"PyTorch {torch.__version__} DataLoader, PIL decode of {a.dir} to {a.size}x{a.size} "
          f"RGB, batch {a.batch}, median of {a.epochs} epochs, {os.cpu_count()} CPUs")
    print("| pipeline | num_workers | images/s | epoch (s) |\n|---|---:|---:|---:|")
    for augmented in (False, True):
        ds = LazyFolder(a.dir, a.size, RandomCropFlip(a.crop) if augmented else None)
        for w in (int(s) for s in a.workers.split(",")):
            loader = DataLoader(ds, batch_size=a.batch, shuffle=True, num_workers=w,
                                persistent_workers=w > 0)
            seconds, images = [], 0
            for e in range(a.epochs + 1):
                t0 = time.perf_counter()
                images = sum(x.shape[0] for x, _ in loader)
                if e > 0:  # epoch 0 warms up
                    seconds.append(time.perf_counter() - t0)
            s = statistics.median(seconds)
            name = "decode + crop + flip" if augmented else "decode"
            print(f"| {name} | {w} | {images / s:.0f} | {s:.2f} |", flush=True)
            del loader


if __name__ == "__main__":
    main()
