# Source: github.com/pytorch/pytorch test/test_autograd.py (TestAutograd.test_hooks)
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
    def test_hooks(self):
        x = torch.ones(5, 5, requires_grad=True)
        y = torch.ones(5, 5) * 4
        y.requires_grad_(True)

        counter = [0]

        def bw_hook(inc, grad):
            self.assertIsInstance(grad, torch.Tensor)
            counter[0] += inc

        z = x ** 2 + x * 2 + x * y + y
        x.register_hook(lambda *args: bw_hook(0, *args))
        test = z.register_hook(lambda *args: bw_hook(1, *args))
        z.backward(torch.ones(5, 5), retain_graph=True)
        self.assertEqual(counter[0], 1)

        test2 = z.register_hook(lambda *args: bw_hook(2, *args))
        z.backward(torch.ones(5, 5), retain_graph=True)
        self.assertEqual(counter[0], 4)

        test2.remove()
        z.backward(torch.ones(5, 5), retain_graph=True)
        self.assertEqual(counter[0], 5)

        def bw_hook_modify(grad):
            return grad.mul(2)

        test.remove()
        z.register_hook(bw_hook_modify)
        with torch.no_grad():
            y.grad.zero_()
        z.backward(torch.ones(5, 5), retain_graph=True)
        self.assertEqual(y.grad, (x + 1) * 2)

        y.register_hook(bw_hook_modify)
        with torch.no_grad():
            y.grad.zero_()
        z.backward(torch.ones(5, 5))
        self.assertEqual(y.grad, (x + 1) * 4)


TestAutograd().test_hooks()
