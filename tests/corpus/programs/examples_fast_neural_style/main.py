# Source: github.com/pytorch/examples fast_neural_style/neural_style/neural_style.py @ 77f55b912142e11fcfdf5b530231fb9c52f181e8
# Changes: the training images (datasets.ImageFolder over a folder of photos, resized and cropped
#   with torchvision's transforms) replaced by a TensorDataset of 2 random 3x16x16 images in
#   [0, 255] (one step: the convolutions' biases before InstanceNorm have a zero gradient up to
#   rounding, which Adam scales to full steps, so a second step compares two engines' rounding
#   noise), and the style image (a file read with PIL) by a random 3x16x16 one; the arguments
#   (argparse, required) by a namespace of the "train" command's defaults with sizes reduced:
#   batch_size 4 -> 2, image_size 256 -> 16, epochs 2 -> 1, log_interval 500 -> 1, no
#   checkpoints; the trained model's torch.save, the "eval" (stylize) command and its ONNX export
#   dropped. vgg.py: torchvision's pretrained VGG16 replaced (see there).
import argparse
import os
import time

import numpy as np
import torch
from torch.optim import Adam
from torch.utils.data import DataLoader, TensorDataset

import utils
from transformer_net import TransformerNet
from vgg import Vgg16


def train(args):
    if args.accel:
        device = torch.accelerator.current_accelerator()
    else:
        device = torch.device("cpu")

    print(f"Using device: {device}")

    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    images = torch.rand(2, 3, args.image_size, args.image_size).mul(255)  # stands in for the photos
    train_dataset = TensorDataset(images, torch.zeros(2, dtype=torch.long))
    train_loader = DataLoader(train_dataset, batch_size=args.batch_size)

    transformer = TransformerNet().to(device)
    optimizer = Adam(transformer.parameters(), args.lr)
    mse_loss = torch.nn.MSELoss()

    vgg = Vgg16(requires_grad=False).to(device)
    style = torch.rand(3, args.style_size, args.style_size).mul(255)  # stands in for the style image
    style = style.repeat(args.batch_size, 1, 1, 1).to(device)

    features_style = vgg(utils.normalize_batch(style))
    gram_style = [utils.gram_matrix(y) for y in features_style]

    for e in range(args.epochs):
        transformer.train()
        agg_content_loss = 0.
        agg_style_loss = 0.
        count = 0
        for batch_id, (x, _) in enumerate(train_loader):
            n_batch = len(x)
            count += n_batch
            optimizer.zero_grad()

            x = x.to(device)
            y = transformer(x)

            y = utils.normalize_batch(y)
            x = utils.normalize_batch(x)

            features_y = vgg(y)
            features_x = vgg(x)

            content_loss = args.content_weight * mse_loss(features_y.relu2_2, features_x.relu2_2)

            style_loss = 0.
            for ft_y, gm_s in zip(features_y, gram_style):
                gm_y = utils.gram_matrix(ft_y)
                style_loss += mse_loss(gm_y, gm_s[:n_batch, :, :])
            style_loss *= args.style_weight

            total_loss = content_loss + style_loss
            total_loss.backward()
            optimizer.step()

            agg_content_loss += content_loss.item()
            agg_style_loss += style_loss.item()

            if (batch_id + 1) % args.log_interval == 0:
                mesg = "{}\tEpoch {}:\t[{}/{}]\tcontent: {:.6f}\tstyle: {:.6f}\ttotal: {:.6f}".format(
                    time.ctime(), e + 1, count, len(train_dataset),
                                  agg_content_loss / (batch_id + 1),
                                  agg_style_loss / (batch_id + 1),
                                  (agg_content_loss + agg_style_loss) / (batch_id + 1)
                )
                print(mesg)

            if args.checkpoint_model_dir is not None and (batch_id + 1) % args.checkpoint_interval == 0:
                transformer.eval().cpu()
                ckpt_model_filename = "ckpt_epoch_" + str(e) + "_batch_id_" + str(batch_id + 1) + ".pth"
                ckpt_model_path = os.path.join(args.checkpoint_model_dir, ckpt_model_filename)
                torch.save(transformer.state_dict(), ckpt_model_path)
                transformer.to(device).train()

    print("\nDone")


def main():
    args = argparse.Namespace(
        accel=False, epochs=1, batch_size=2, image_size=16, style_size=16, seed=42, content_weight=1e5,
        style_weight=1e10, lr=1e-3, log_interval=1, checkpoint_model_dir=None, checkpoint_interval=2000,
    )
    train(args)


if __name__ == "__main__":
    main()
