# Source: github.com/pytorch/pytorch test/test_autograd.py (TestAutograd.test_no_unnecessary_save)
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
    def test_no_unnecessary_save(self):
        # If we kept x in the derivative Function of x * 2 we would
        # get an error in the backward that would complain that we've
        # modified x, which was needed for gradient computation.
        # Since we should elide unnecessary saves, this test should pass.
        mu = torch.ones(1, requires_grad=True)
        x = torch.empty(1)
        loss = 0
        for i in range(3):
            x.detach_()
            x.copy_(mu + i)
            ft = torch.tensor([float(i)])
            multiplied = x * ft
            s = multiplied.sum()
            loss += s
        loss.backward()


TestAutograd().test_no_unnecessary_save()
