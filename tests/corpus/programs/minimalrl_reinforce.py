# Source: github.com/seungeunrho/minimalRL REINFORCE.py @ c8efed8481e3cd40e9739cfde220a55522555b57
# Changes: gym's CartPole-v1 replaced by a small stand-in with its dynamics (gym is not installed),
#   episodes cut at 20 steps; 3 episodes instead of 10000; print interval 20 -> 1.
import numpy as _np


class _FakeCartPole:
    """Stands in for gym's CartPole-v1 (not installed in CI): the same state (4 float32s),
    reward 1 per step, CartPole's dynamics and termination, episodes cut at 20 steps."""

    def __init__(self):
        self._rng = _np.random.RandomState(0)

    def reset(self, seed=None):
        if seed is not None:
            self._rng = _np.random.RandomState(seed)
        self.state = self._rng.uniform(-0.05, 0.05, size=(4,)).astype(_np.float32)
        self.steps = 0
        return self.state.copy(), {}

    def step(self, action):
        x, x_dot, theta, theta_dot = (float(v) for v in self.state)
        force = 10.0 if action == 1 else -10.0
        costheta, sintheta = _np.cos(theta), _np.sin(theta)
        temp = (force + 0.05 * theta_dot ** 2 * sintheta) / 1.1
        thetaacc = (9.8 * sintheta - costheta * temp) / (0.5 * (4.0 / 3.0 - 0.1 * costheta ** 2 / 1.1))
        xacc = temp - 0.05 * thetaacc * costheta / 1.1
        x, x_dot = x + 0.02 * x_dot, x_dot + 0.02 * xacc
        theta, theta_dot = theta + 0.02 * theta_dot, theta_dot + 0.02 * thetaacc
        self.state = _np.array([x, x_dot, theta, theta_dot], dtype=_np.float32)
        self.steps += 1
        terminated = bool(abs(x) > 2.4 or abs(theta) > 0.2095) or self.steps >= 20
        return self.state.copy(), 1.0, terminated, False, {}

    def close(self):
        pass


class _FakePendulum:
    """Stands in for gym's Pendulum-v1: observation (cos th, sin th, th dot) as float32, one
    torque in [-2, 2], the pendulum's dynamics and reward; episodes cut at 20 steps (done)."""

    def __init__(self):
        self._rng = _np.random.RandomState(0)

    def reset(self, seed=None):
        if seed is not None:
            self._rng = _np.random.RandomState(seed)
        self.th, self.thdot = self._rng.uniform([-_np.pi, -1.0], [_np.pi, 1.0])
        self.steps = 0
        return self._obs(), {}

    def _obs(self):
        return _np.array([_np.cos(self.th), _np.sin(self.th), self.thdot], dtype=_np.float32)

    def step(self, u):
        u = float(_np.clip(u[0], -2.0, 2.0))
        norm = ((self.th + _np.pi) % (2 * _np.pi)) - _np.pi
        cost = norm ** 2 + 0.1 * self.thdot ** 2 + 0.001 * u ** 2
        self.thdot = float(_np.clip(self.thdot + (3 * 10.0 / 2 * _np.sin(self.th) + 3.0 * u) * 0.05, -8, 8))
        self.th = self.th + self.thdot * 0.05
        self.steps += 1
        return self._obs(), -float(cost), self.steps >= 20, False, {}

    def close(self):
        pass


class gym:  # named as the module it stands in for, so that the program below reads as written
    @staticmethod
    def make(name, render_mode=None):
        return _FakePendulum() if name.startswith("Pendulum") else _FakeCartPole()
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

#Hyperparameters
learning_rate = 0.0002
gamma         = 0.98

class Policy(nn.Module):
    def __init__(self):
        super(Policy, self).__init__()
        self.data = []
        
        self.fc1 = nn.Linear(4, 128)
        self.fc2 = nn.Linear(128, 2)
        self.optimizer = optim.Adam(self.parameters(), lr=learning_rate)
        
    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.softmax(self.fc2(x), dim=0)
        return x
      
    def put_data(self, item):
        self.data.append(item)
        
    def train_net(self):
        R = 0
        self.optimizer.zero_grad()
        for r, prob in self.data[::-1]:
            R = r + gamma * R
            loss = -torch.log(prob) * R
            loss.backward()
        self.optimizer.step()
        self.data = []

def main():
    env = gym.make('CartPole-v1')
    pi = Policy()
    score = 0.0
    print_interval = 1
    
    
    for n_epi in range(3):
        s, _ = env.reset()
        done = False
        
        while not done: # CartPole-v1 forced to terminates at 500 step.
            prob = pi(torch.from_numpy(s).float())
            m = Categorical(prob)
            a = m.sample()
            s_prime, r, done, truncated, info = env.step(a.item())
            pi.put_data((r,prob[a]))
            s = s_prime
            score += r
            
        pi.train_net()
        
        if n_epi%print_interval==0 and n_epi!=0:
            print("# of episode :{}, avg score : {}".format(n_epi, score/print_interval))
            score = 0.0
    env.close()
    
if __name__ == '__main__':
    main()