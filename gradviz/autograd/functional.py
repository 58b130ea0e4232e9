"""torch.autograd.functional (being written)."""
