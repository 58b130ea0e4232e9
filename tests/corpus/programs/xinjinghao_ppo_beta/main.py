# Source: github.com/XinJingHao/PPO-Continuous-Pytorch main.py (and PPO.py, utils.py, unchanged) @ 388113545f1edf04dbd0e0f605c5ceddba3ab131
# Changes: gymnasium's Pendulum-v1 replaced by a stand-in with its dynamics and API (gymnasium is not
#   installed), 20 steps an episode; defaults: dvc cuda -> cpu, T_horizon 2048 -> 16,
#   Max_train_steps 5e7 -> 40, eval_interval 5e3 -> 20, K_epochs 10 -> 2, net_width 150 -> 32,
#   a/c_optim_batch_size 64 -> 8. The actor is the repository's default, a Beta policy.
from datetime import datetime
import os, shutil
import argparse
import torch
import numpy as _np


class _Box:
    def __init__(self, low, high):
        self.low, self.high = _np.asarray(low, dtype=_np.float32), _np.asarray(high, dtype=_np.float32)
        self.shape = self.low.shape


class _FakePendulum:
    """Stands in for gymnasium's Pendulum-v1 (gymnasium is not installed): observation (cos th, sin
    th, th dot) as float32, one torque in [-2, 2], the pendulum's dynamics and reward, gymnasium's
    API; episodes truncated at 20 steps (not 200)."""

    observation_space = _Box([-1.0, -1.0, -8.0], [1.0, 1.0, 8.0])
    action_space = _Box([-2.0], [2.0])
    _max_episode_steps = 20

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
        return self._obs(), -float(cost), False, self.steps >= self._max_episode_steps, {}

    def close(self):
        pass


class gym:  # named as the module it stands in for, so that the program below reads as written
    @staticmethod
    def make(name, render_mode=None):
        return _FakePendulum()

from utils import str2bool, Action_adapter, Reward_adapter, evaluate_policy
from PPO import PPO_agent


'''Hyperparameter Setting'''
parser = argparse.ArgumentParser()
parser.add_argument('--dvc', type=str, default='cpu', help='running device: cuda or cpu')
parser.add_argument('--EnvIdex', type=int, default=0, help='PV1, Lch_Cv2, Humanv4, HCv4, BWv3, BWHv3')
parser.add_argument('--write', type=str2bool, default=False, help='Use SummaryWriter to record the training')
parser.add_argument('--render', type=str2bool, default=False, help='Render or Not')
parser.add_argument('--Loadmodel', type=str2bool, default=False, help='Load pretrained model or Not')
parser.add_argument('--ModelIdex', type=int, default=100, help='which model to load')

parser.add_argument('--seed', type=int, default=0, help='random seed')
parser.add_argument('--T_horizon', type=int, default=16, help='lenth of long trajectory')
parser.add_argument('--Distribution', type=str, default='Beta', help='Should be one of Beta ; GS_ms  ;  GS_m')
parser.add_argument('--Max_train_steps', type=int, default=40, help='Max training steps')
parser.add_argument('--save_interval', type=int, default=int(5e5), help='Model saving interval, in steps.')
parser.add_argument('--eval_interval', type=int, default=20, help='Model evaluating interval, in steps.')

parser.add_argument('--gamma', type=float, default=0.99, help='Discounted Factor')
parser.add_argument('--lambd', type=float, default=0.95, help='GAE Factor')
parser.add_argument('--clip_rate', type=float, default=0.2, help='PPO Clip rate')
parser.add_argument('--K_epochs', type=int, default=2, help='PPO update times')
parser.add_argument('--net_width', type=int, default=32, help='Hidden net width')
parser.add_argument('--a_lr', type=float, default=2e-4, help='Learning rate of actor')
parser.add_argument('--c_lr', type=float, default=2e-4, help='Learning rate of critic')
parser.add_argument('--l2_reg', type=float, default=1e-3, help='L2 regulization coefficient for Critic')
parser.add_argument('--a_optim_batch_size', type=int, default=8, help='lenth of sliced trajectory of actor')
parser.add_argument('--c_optim_batch_size', type=int, default=8, help='lenth of sliced trajectory of critic')
parser.add_argument('--entropy_coef', type=float, default=1e-3, help='Entropy coefficient of Actor')
parser.add_argument('--entropy_coef_decay', type=float, default=0.99, help='Decay rate of entropy_coef')
opt = parser.parse_args()
opt.dvc = torch.device(opt.dvc) # from str to torch.device
print(opt)


def main():
    EnvName = ['Pendulum-v1','LunarLanderContinuous-v2','Humanoid-v4','HalfCheetah-v4','BipedalWalker-v3','BipedalWalkerHardcore-v3']
    BrifEnvName = ['PV1', 'LLdV2', 'Humanv4', 'HCv4','BWv3', 'BWHv3']

    # Build Env
    env = gym.make(EnvName[opt.EnvIdex], render_mode = "human" if opt.render else None)
    eval_env = gym.make(EnvName[opt.EnvIdex])
    opt.state_dim = env.observation_space.shape[0]
    opt.action_dim = env.action_space.shape[0]
    opt.max_action = float(env.action_space.high[0])
    opt.max_steps = env._max_episode_steps
    print('Env:',EnvName[opt.EnvIdex],'  state_dim:',opt.state_dim,'  action_dim:',opt.action_dim,
          '  max_a:',opt.max_action,'  min_a:',env.action_space.low[0], 'max_steps', opt.max_steps)

    # Seed Everything
    env_seed = opt.seed
    torch.manual_seed(opt.seed)
    torch.cuda.manual_seed(opt.seed)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    print("Random Seed: {}".format(opt.seed))

    # Use tensorboard to record training curves
    if opt.write:
        from torch.utils.tensorboard import SummaryWriter
        timenow = str(datetime.now())[0:-10]
        timenow = ' ' + timenow[0:13] + '_' + timenow[-2::]
        writepath = 'runs/{}'.format(BrifEnvName[opt.EnvIdex]) + timenow
        if os.path.exists(writepath): shutil.rmtree(writepath)
        writer = SummaryWriter(log_dir=writepath)

    # Beta dist maybe need larger learning rate, Sometimes helps
    # if Dist[distnum] == 'Beta' :
    #     kwargs["a_lr"] *= 2
    #     kwargs["c_lr"] *= 4

    if not os.path.exists('model'): os.mkdir('model')
    agent = PPO_agent(**vars(opt)) # transfer opt to dictionary, and use it to init PPO_agent
    if opt.Loadmodel: agent.load(BrifEnvName[opt.EnvIdex], opt.ModelIdex)

    if opt.render:
        while True:
            ep_r = evaluate_policy(env, agent, opt.max_action, 1)
            print(f'Env:{EnvName[opt.EnvIdex]}, Episode Reward:{ep_r}')
    else:
        traj_lenth, total_steps = 0, 0
        while total_steps < opt.Max_train_steps:
            s, info = env.reset(seed=env_seed) # Do not use opt.seed directly, or it can overfit to opt.seed
            env_seed += 1
            done = False

            '''Interact & trian'''
            while not done:
                '''Interact with Env'''
                a, logprob_a = agent.select_action(s, deterministic=False) # use stochastic when training
                act = Action_adapter(a,opt.max_action) #[0,1] to [-max,max]
                s_next, r, dw, tr, info = env.step(act) # dw: dead&win; tr: truncated
                r = Reward_adapter(r, opt.EnvIdex)
                done = (dw or tr)

                '''Store the current transition'''
                agent.put_data(s, a, r, s_next, logprob_a, done, dw, idx = traj_lenth)
                s = s_next

                traj_lenth += 1
                total_steps += 1

                '''Update if its time'''
                if traj_lenth % opt.T_horizon == 0:
                    agent.train()
                    traj_lenth = 0

                '''Record & log'''
                if total_steps % opt.eval_interval == 0:
                    score = evaluate_policy(eval_env, agent, opt.max_action, turns=3) # evaluate the policy for 3 times, and get averaged result
                    if opt.write: writer.add_scalar('ep_r', score, global_step=total_steps)
                    print('EnvName:',EnvName[opt.EnvIdex],'seed:',opt.seed,'steps: {}k'.format(int(total_steps/1000)),'score:', score)

                '''Save model'''
                if total_steps % opt.save_interval==0:
                    agent.save(BrifEnvName[opt.EnvIdex], int(total_steps/1000))

        env.close()
        eval_env.close()

if __name__ == '__main__':
    main()





