# Source: github.com/pytorch/pytorch test/test_autograd.py (TestAutograd.test_retain_grad)
#   @ 0011ee059a1ed8ca92d609383f466095d1bb1fcf
# Changes: the one test method, as written, in a class whose TestCase is a small stand-in for
#   torch.testing._internal's (assertEqual through numpy; the rest is unittest's); the test is
#   called at the end.
import unittest

import numpy as np
import torch
from torch.autograd import Function, Variable


class TestCase(unittest.TestCase):
    """The parts of torch.testing._internal's TestCase these tests use (not part of the extract)."""

    def __init__(self):
        super().__init__()

    def assertEqual(self, a, b, msg=None, atol=None, rtol=None):
        def arr(v):
            return np.asarray(v.detach().numpy() if hasattr(v, "detach") else v, dtype=np.float64)

        np.testing.assert_allclose(arr(a), arr(b), rtol=1.3e-6 if rtol is None else rtol,
                                   atol=1e-5 if atol is None else atol, err_msg=msg or "")


class TestAutograd(TestCase):
    def test_retain_grad(self):
        input = torch.rand(1, 3, requires_grad=True)
        h1 = input * 3
        out = (h1 * h1).sum()

        # It should be possible to call retain_grad() multiple times
        h1.retain_grad()
        h1.retain_grad()

        # Gradient should be accumulated
        out.backward(retain_graph=True)
        self.assertEqual(h1 * 2, h1.grad)
        out.backward(retain_graph=True)
        self.assertEqual(h1 * 4, h1.grad)

        with torch.no_grad():
            input.grad.zero_()
        # It should be a no-op for leaves
        input.retain_grad()
        input.retain_grad()
        out.backward()
        self.assertEqual(input * 18, input.grad)


TestAutograd().test_retain_grad()
