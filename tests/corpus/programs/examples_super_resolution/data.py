# Source: github.com/pytorch/examples super_resolution/data.py @ 77f55b912142e11fcfdf5b530231fb9c52f181e8
# Changes: the BSDS300 download dropped: DatasetFromFolder gets a number of random images (8
#   for training, 4 for testing) in place of a folder; the crop size reduced (256 -> 32); the
#   torchvision transforms (CenterCrop, Resize, ToTensor) written with torch ops on the images,
#   which dataset.py makes as tensors.
import torch.nn.functional as F

from dataset import DatasetFromFolder


def calculate_valid_crop_size(crop_size, upscale_factor):
    return crop_size - (crop_size % upscale_factor)


def center_crop(img, crop_size):  # stands in for torchvision's CenterCrop on a (1, H, W) tensor
    top = (img.shape[1] - crop_size) // 2
    left = (img.shape[2] - crop_size) // 2
    return img[:, top:top + crop_size, left:left + crop_size]


def input_transform(crop_size, upscale_factor):
    # CenterCrop(crop_size), Resize(crop_size // upscale_factor), ToTensor(): an average over
    # each upscale_factor x upscale_factor block stands in for the resize
    return lambda img: F.avg_pool2d(center_crop(img, crop_size), upscale_factor)


def target_transform(crop_size):
    return lambda img: center_crop(img, crop_size)


def get_training_set(upscale_factor):
    crop_size = calculate_valid_crop_size(32, upscale_factor)

    return DatasetFromFolder(8,
                             input_transform=input_transform(crop_size, upscale_factor),
                             target_transform=target_transform(crop_size))


def get_test_set(upscale_factor):
    crop_size = calculate_valid_crop_size(32, upscale_factor)

    return DatasetFromFolder(4,
                             input_transform=input_transform(crop_size, upscale_factor),
                             target_transform=target_transform(crop_size))
