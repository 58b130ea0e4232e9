"""torch._inductor: gradviz has no compiler (torch.compile returns its argument); scripts that
set its config flags import ``torch._inductor.config`` (gradviz/_inductor/config.py)."""
