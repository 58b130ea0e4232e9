# Stands in for sklearn.datasets (not installed): make_moons as scikit-learn defines it (two
# interleaving half circles, shuffled, Gaussian noise), drawn from numpy's global generator.
import numpy as np


class datasets:
    @staticmethod
    def make_moons(n_samples=100, noise=None):
        n_out, n_in = n_samples // 2, n_samples - n_samples // 2
        outer = np.linspace(0, np.pi, n_out)
        inner = np.linspace(0, np.pi, n_in)
        X = np.vstack([np.append(np.cos(outer), 1 - np.cos(inner)),
                       np.append(np.sin(outer), 1 - np.sin(inner) - 0.5)]).T
        y = np.hstack([np.zeros(n_out, dtype=np.intp), np.ones(n_in, dtype=np.intp)])
        idx = np.random.permutation(n_samples)
        X, y = X[idx], y[idx]
        if noise is not None:
            X = X + np.random.normal(scale=noise, size=X.shape)
        return X, y
