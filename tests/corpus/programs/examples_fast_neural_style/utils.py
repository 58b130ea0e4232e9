# Source: github.com/pytorch/examples fast_neural_style/neural_style/utils.py @ 77f55b912142e11fcfdf5b530231fb9c52f181e8
# Changes: load_image and save_image (PIL image files) dropped: the program makes its images.
import torch


def gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    features_t = features.transpose(1, 2)
    gram = features.bmm(features_t) / (ch * h * w)
    return gram


def normalize_batch(batch):
    # normalize using imagenet mean and std
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    batch = batch.div_(255.0)
    return (batch - mean) / std
