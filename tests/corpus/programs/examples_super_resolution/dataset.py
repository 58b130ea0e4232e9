# Source: github.com/pytorch/examples super_resolution/dataset.py @ 77f55b912142e11fcfdf5b530231fb9c52f181e8
# Changes: the image files (read with PIL, converted to YCbCr) replaced by random 1x40x40 float32
#   images made in the constructor (a number of them in place of a folder); .copy() of a PIL image
#   is .clone() of a tensor.
import torch
import torch.utils.data as data


def load_img(images, index):  # stands in for PIL: an image file's Y channel (of YCbCr), in [0, 1]
    return images[index]


class DatasetFromFolder(data.Dataset):
    def __init__(self, n_images, input_transform=None, target_transform=None):
        super(DatasetFromFolder, self).__init__()
        self.images = torch.rand(n_images, 1, 40, 40)

        self.input_transform = input_transform
        self.target_transform = target_transform

    def __getitem__(self, index):
        input = load_img(self.images, index)
        target = input.clone()
        if self.input_transform:
            input = self.input_transform(input)
        if self.target_transform:
            target = self.target_transform(target)

        return input, target

    def __len__(self):
        return len(self.images)
