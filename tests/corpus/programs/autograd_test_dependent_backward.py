# Source: github.com/pytorch/pytorch test/test_autograd.py (TestAutograd.test_dependent_backward)
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
    def test_dependent_backward(self):
        x = torch.randn(10, requires_grad=True)
        y = x ** 2
        z = y ** 3

        go_y = torch.randn(10)
        go_z = torch.randn(10)
        torch.autograd.backward([y, z], [go_y, go_z])

        xd = x
        self.assertEqual(x.grad, 2 * xd * go_y + 6 * xd.pow(5) * go_z)


TestAutograd().test_dependent_backward()
