# Source: github.com/eriklindernoren/PyTorch-GAN implementations/cyclegan/datasets.py @ 36d3c77e5ff20ebe0aeefd322326a134a279b93e
# Changes: the image folders (monet2photo, a download) and PIL (not installed) replaced by stand-ins: each
#   "file" is a random 3x40x40 RGB image in [0, 1] (3 A and 4 B images for training, 5 and 6 for the
#   test, from generators seeded 0 and 1), Image.open returns it; torchvision.transforms by
#   stand-ins on tensors (Resize by bicubic interpolation, RandomCrop, RandomHorizontalFlip drawing from
#   torch's generator as torchvision's do; ToTensor; Normalize).
import glob
import random
import os

from torch.utils.data import Dataset
import torch


class Image:  # stands in for PIL.Image (not installed): an "image file" is a tensor already
    BICUBIC = 3

    @staticmethod
    def open(image):
        return image


class transforms:  # stands in for torchvision.transforms (not installed): the transforms used, on tensors
    class Compose:
        def __init__(self, transforms):
            self.transforms = transforms

        def __call__(self, x):
            for t in self.transforms:
                x = t(x)
            return x

    class Resize:
        def __init__(self, size, interpolation=None):
            self.size = size

        def __call__(self, x):
            return torch.nn.functional.interpolate(x[None], size=(self.size, self.size), mode="bicubic",
                                                   align_corners=False)[0]

    class RandomCrop:
        def __init__(self, size):
            self.size = size

        def __call__(self, x):
            th, tw = self.size
            h, w = x.shape[-2:]
            i = torch.randint(0, h - th + 1, size=(1,)).item()
            j = torch.randint(0, w - tw + 1, size=(1,)).item()
            return x[..., i:i + th, j:j + tw]

    class RandomHorizontalFlip:
        def __init__(self, p=0.5):
            self.p = p

        def __call__(self, x):
            return x.flip(-1) if torch.rand(1) < self.p else x

    class ToTensor:
        def __call__(self, x):
            return x

    class Normalize:
        def __init__(self, mean, std):
            self.mean, self.std = mean, std

        def __call__(self, x):
            return (x - torch.tensor(self.mean).view(-1, 1, 1)) / torch.tensor(self.std).view(-1, 1, 1)


def to_rgb(image):  # not called: the stand-in images are RGB
    rgb_image = Image.new("RGB", image.size)
    rgb_image.paste(image)
    return rgb_image


class ImageDataset(Dataset):
    def __init__(self, root, transforms_=None, unaligned=False, mode="train"):
        self.transform = transforms.Compose(transforms_)
        self.unaligned = unaligned

        g = torch.Generator().manual_seed(0 if mode == "train" else 1)  # stands in for the folders' files
        self.files_A = list(torch.rand(3 if mode == "train" else 5, 3, 40, 40, generator=g))
        self.files_B = list(torch.rand(4 if mode == "train" else 6, 3, 40, 40, generator=g))

    def __getitem__(self, index):
        image_A = Image.open(self.files_A[index % len(self.files_A)])

        if self.unaligned:
            image_B = Image.open(self.files_B[random.randint(0, len(self.files_B) - 1)])
        else:
            image_B = Image.open(self.files_B[index % len(self.files_B)])

        # Convert grayscale images to rgb
        if image_A.shape[0] != 3:
            image_A = to_rgb(image_A)
        if image_B.shape[0] != 3:
            image_B = to_rgb(image_B)

        item_A = self.transform(image_A)
        item_B = self.transform(image_B)
        return {"A": item_A, "B": item_B}

    def __len__(self):
        return max(len(self.files_A), len(self.files_B))
