"""torch.backends.xnnpack: torch's CPU build reports XNNPACK off for its ops; so does gradviz."""

enabled = False
