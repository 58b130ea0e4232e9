# Source: github.com/ShotaDeguchi/PINN_Torch 00_burgers/main.py (and pinn.py, parameters.py,
#   preparations.py, icbc.py, optimizers.py, activations.py) @ fbe9fb15c9d104e7627ea710006b27d07892055a
# Changes: the plots (matplotlib, saved figures) dropped, the inferred solution still computed on an
#   11 x 11 grid (not 101 x 101); in parameters.py width 256 -> 32, 3 epochs (not 1e5), monitor every
#   epoch; in preparations.py a 21 x 21 grid of points (not 101 x 201).
"""
********************************************************************************
main file to execute
********************************************************************************
"""

import torch
import numpy as np

from pinn import PINN
from preparations import prp_dat
from parameters import params
from icbc import initial, boundary

def main():
    f_in, f_out, width, depth, \
    w_init, b_init, act, \
    lr, opt, \
    f_scl, nu, \
    w_ini, w_bnd, w_pde, bc, \
    f_mntr, r_seed, d_type, device, \
    n_epch, n_btch, c_tol = params()

    XT_ini_trn, XT_ini_val, XT_ini_tst, \
    XT_bnd_trn, XT_bnd_val, XT_bnd_tst, \
    XT_pde_trn, XT_pde_val, XT_pde_tst = prp_dat()

    # training set
    u_ini_trn = initial(XT_ini_trn[:,0])
    u_bnd_trn = boundary(XT_bnd_trn[:,1])

    # validation set
    u_ini_val = initial(XT_ini_val[:,0])
    u_bnd_val = boundary(XT_bnd_val[:,1])
    
    pinn = PINN(
        XT_ini_trn[:,0], XT_ini_trn[:,1], u_ini_trn, 
        XT_bnd_trn[:,0], XT_bnd_trn[:,1], u_bnd_trn, 
        XT_pde_trn[:,0], XT_pde_trn[:,1], 
        XT_ini_val[:,0], XT_ini_val[:,1], u_ini_val, 
        XT_bnd_val[:,0], XT_bnd_val[:,1], u_bnd_val, 
        XT_pde_val[:,0], XT_pde_val[:,1], 
        f_in, f_out, width, depth,
        w_init, b_init, act, 
        lr, opt, 
        f_scl, nu, 
        w_ini, w_bnd, w_pde, bc, 
        f_mntr, r_seed, d_type, device
    )
    pinn.to(device)
    pinn.train(epoch = n_epch, batch = n_btch, tol = c_tol)

    nx, nt = 11, 11
    x, t = np.linspace(-1, 1, nx), np.linspace(0, 1, nt)
    X, T = np.meshgrid(x, t)
    X, T = X.reshape(-1, 1), T.reshape(-1, 1)
    XT = np.hstack((X, T)).astype(np.float32)
    u_ = pinn.infer(XT)
    u_ = np.reshape(u_, (nx, nt))


if __name__ == "__main__":
    main()
