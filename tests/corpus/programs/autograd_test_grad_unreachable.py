# Source: github.com/pytorch/pytorch test/test_autograd.py (TestAutograd.test_grad_unreachable)
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
    def test_grad_unreachable(self):
        x = torch.ones(1, requires_grad=True)
        y = torch.ones(1, requires_grad=True)
        # Make sure x and y have grad accumulators allocated
        z = x * 2
        w = y * 2

        grad_x, grad_y = torch.autograd.grad(x * 2, [x, y], allow_unused=True)
        self.assertEqual(grad_x, x * 2)
        self.assertIsNone(grad_y)

        # This is slightly different than the case above, because z doesn't even
        # have a grad accumulator allocated.
        z = torch.ones(1, requires_grad=True)
        grad_x, grad_z = torch.autograd.grad(x * 2, [x, z], allow_unused=True)
        self.assertEqual(grad_x, x * 2)
        self.assertIsNone(grad_z)

        # allow_unused=False, but grads contains None inside, should throw
        with self.assertRaisesRegex(RuntimeError,
                                    "Set allow_unused=True"):
            grad_x, grad_y = torch.autograd.grad(x * 2, [x, y], allow_unused=False)


TestAutograd().test_grad_unreachable()
