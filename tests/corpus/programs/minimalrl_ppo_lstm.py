# Source: github.com/seungeunrho/minimalRL ppo-lstm.py @ c8efed8481e3cd40e9739cfde220a55522555b57
# Changes: gym's CartPole-v1 replaced by a small stand-in with its dynamics (gym is not installed),
#   episodes cut at 20 steps; 2 episodes instead of 10000, T_horizon 20 -> 10; print interval 20 -> 1.
#PPO-LSTM
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
import time
import numpy as np

#Hyperparameters
learning_rate = 0.0005
gamma         = 0.98
lmbda         = 0.95
eps_clip      = 0.1
K_epoch       = 2
T_horizon     = 10

class PPO(nn.Module):
    def __init__(self):
        super(PPO, self).__init__()
        self.data = []
        
        self.fc1   = nn.Linear(4,64)
        self.lstm  = nn.LSTM(64,32)
        self.fc_pi = nn.Linear(32,2)
        self.fc_v  = nn.Linear(32,1)
        self.optimizer = optim.Adam(self.parameters(), lr=learning_rate)

    def pi(self, x, hidden):
        x = F.relu(self.fc1(x))
        x = x.view(-1, 1, 64)
        x, lstm_hidden = self.lstm(x, hidden)
        x = self.fc_pi(x)
        prob = F.softmax(x, dim=2)
        return prob, lstm_hidden
    
    def v(self, x, hidden):
        x = F.relu(self.fc1(x))
        x = x.view(-1, 1, 64)
        x, lstm_hidden = self.lstm(x, hidden)
        v = self.fc_v(x)
        return v
      
    def put_data(self, transition):
        self.data.append(transition)
        
    def make_batch(self):
        s_lst, a_lst, r_lst, s_prime_lst, prob_a_lst, h_in_lst, h_out_lst, done_lst = [], [], [], [], [], [], [], []
        for transition in self.data:
            s, a, r, s_prime, prob_a, h_in, h_out, done = transition
            
            s_lst.append(s)
            a_lst.append([a])
            r_lst.append([r])
            s_prime_lst.append(s_prime)
            prob_a_lst.append([prob_a])
            h_in_lst.append(h_in)
            h_out_lst.append(h_out)
            done_mask = 0 if done else 1
            done_lst.append([done_mask])
            
        s,a,r,s_prime,done_mask,prob_a = torch.tensor(s_lst, dtype=torch.float), torch.tensor(a_lst), \
                                         torch.tensor(r_lst), torch.tensor(s_prime_lst, dtype=torch.float), \
                                         torch.tensor(done_lst, dtype=torch.float), torch.tensor(prob_a_lst)
        self.data = []
        return s,a,r,s_prime, done_mask, prob_a, h_in_lst[0], h_out_lst[0]
        
    def train_net(self):
        s,a,r,s_prime,done_mask, prob_a, (h1_in, h2_in), (h1_out, h2_out) = self.make_batch()
        first_hidden  = (h1_in.detach(), h2_in.detach())
        second_hidden = (h1_out.detach(), h2_out.detach())

        for i in range(K_epoch):
            v_prime = self.v(s_prime, second_hidden).squeeze(1)
            td_target = r + gamma * v_prime * done_mask
            v_s = self.v(s, first_hidden).squeeze(1)
            delta = td_target - v_s
            delta = delta.detach().numpy()
            
            advantage_lst = []
            advantage = 0.0
            for item in delta[::-1]:
                advantage = gamma * lmbda * advantage + item[0]
                advantage_lst.append([advantage])
            advantage_lst.reverse()
            advantage = torch.tensor(advantage_lst, dtype=torch.float)

            pi, _ = self.pi(s, first_hidden)
            pi_a = pi.squeeze(1).gather(1,a)
            ratio = torch.exp(torch.log(pi_a) - torch.log(prob_a))  # a/b == log(exp(a)-exp(b))

            surr1 = ratio * advantage
            surr2 = torch.clamp(ratio, 1-eps_clip, 1+eps_clip) * advantage
            loss = -torch.min(surr1, surr2) + F.smooth_l1_loss(v_s, td_target.detach())

            self.optimizer.zero_grad()
            loss.mean().backward(retain_graph=True)
            self.optimizer.step()
        
def main():
    env = gym.make('CartPole-v1')
    model = PPO()
    score = 0.0
    print_interval = 1
    
    for n_epi in range(2):
        h_out = (torch.zeros([1, 1, 32], dtype=torch.float), torch.zeros([1, 1, 32], dtype=torch.float))
        s, _ = env.reset()
        done = False
        
        while not done:
            for t in range(T_horizon):
                h_in = h_out
                prob, h_out = model.pi(torch.from_numpy(s).float(), h_in)
                prob = prob.view(-1)
                m = Categorical(prob)
                a = m.sample().item()
                s_prime, r, done, truncated, info = env.step(a)

                model.put_data((s, a, r/100.0, s_prime, prob[a].item(), h_in, h_out, done))
                s = s_prime

                score += r
                if done:
                    break
                    
            model.train_net()

        if n_epi%print_interval==0 and n_epi!=0:
            print("# of episode :{}, avg score : {:.1f}".format(n_epi, score/print_interval))
            score = 0.0

    env.close()

if __name__ == '__main__':
    main()