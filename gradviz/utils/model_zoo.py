"""torch.utils.model_zoo: load_url is torch.hub.load_state_dict_from_url (offline: gradviz/hub.py)."""

from gradviz.hub import load_state_dict_from_url as load_url

__all__ = ["load_url"]
