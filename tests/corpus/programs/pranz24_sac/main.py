# Source: github.com/pranz24/pytorch-soft-actor-critic main.py (and sac.py, model.py, replay_memory.py,
#   utils.py, unchanged) @ c1805660b3961694be54079a355155a5cad492f5
# Changes: MuJoCo's HalfCheetah-v2 replaced by a stand-in with its spaces and made-up dynamics (gym and
#   mujoco are not installed), 20 steps an episode; TensorBoard's SummaryWriter by a stand-in that drops
#   the scalars; defaults: batch_size 256 -> 8, num_steps 1000001 -> 19 (one episode: over longer runs
#   the two engines' float32 roundings, amplified by Adam, part the trajectories), hidden_size 256 -> 32,
#   start_steps 10000 -> 20.
import argparse
import datetime
import numpy as np
import itertools
import torch
from sac import SAC
import numpy as _np


class _Box:
    def __init__(self, low, high, shape):
        self.low, self.high, self.shape = _np.full(shape, low, _np.float32), _np.full(shape, high, _np.float32), shape
        self._rng = _np.random.RandomState(0)

    def seed(self, seed):
        self._rng = _np.random.RandomState(seed)

    def sample(self):
        return self._rng.uniform(self.low, self.high).astype(_np.float32)


class _FakeHalfCheetah:
    """Stands in for MuJoCo's HalfCheetah-v2 (gym and mujoco are not installed): its spaces (17
    observations, 6 torques in [-1, 1]) and gym's old API, over made-up smooth dynamics (a fixed
    random linear map through tanh), reward for forward motion less the torques' cost; episodes
    of 20 steps."""

    observation_space = _Box(-_np.inf, _np.inf, (17,))
    action_space = _Box(-1.0, 1.0, (6,))
    _max_episode_steps = 20

    def __init__(self):
        rng = _np.random.RandomState(1)
        self.W = rng.normal(scale=0.3, size=(17, 17))
        self.U = rng.normal(scale=0.3, size=(17, 6))
        self._rng = _np.random.RandomState(0)

    def seed(self, seed):
        self._rng = _np.random.RandomState(seed)

    def reset(self):
        self.s = self._rng.uniform(-0.1, 0.1, size=17)
        self.t = 0
        return self.s.copy()

    def step(self, a):
        a = _np.clip(_np.asarray(a, dtype=_np.float64), -1, 1)
        self.s = _np.tanh(self.W @ self.s + self.U @ a)
        self.t += 1
        reward = float(self.s[0] - 0.1 * (a ** 2).sum())
        return self.s.copy(), reward, self.t >= self._max_episode_steps, {}

    def close(self):
        pass


class gym:  # named as the module it stands in for, so that the program below reads as written
    @staticmethod
    def make(name):
        return _FakeHalfCheetah()


class SummaryWriter:
    """Stands in for TensorBoard's writer: the scalars are dropped (no log files)."""

    def __init__(self, log_dir=None):
        pass

    def add_scalar(self, tag, value, global_step=None):
        pass
from replay_memory import ReplayMemory

parser = argparse.ArgumentParser(description='PyTorch Soft Actor-Critic Args')
parser.add_argument('--env-name', default="HalfCheetah-v2",
                    help='Mujoco Gym environment (default: HalfCheetah-v2)')
parser.add_argument('--policy', default="Gaussian",
                    help='Policy Type: Gaussian | Deterministic (default: Gaussian)')
parser.add_argument('--eval', type=bool, default=True,
                    help='Evaluates a policy a policy every 10 episode (default: True)')
parser.add_argument('--gamma', type=float, default=0.99, metavar='G',
                    help='discount factor for reward (default: 0.99)')
parser.add_argument('--tau', type=float, default=0.005, metavar='G',
                    help='target smoothing coefficient(τ) (default: 0.005)')
parser.add_argument('--lr', type=float, default=0.0003, metavar='G',
                    help='learning rate (default: 0.0003)')
parser.add_argument('--alpha', type=float, default=0.2, metavar='G',
                    help='Temperature parameter α determines the relative importance of the entropy\
                            term against the reward (default: 0.2)')
parser.add_argument('--automatic_entropy_tuning', type=bool, default=False, metavar='G',
                    help='Automaically adjust α (default: False)')
parser.add_argument('--seed', type=int, default=123456, metavar='N',
                    help='random seed (default: 123456)')
parser.add_argument('--batch_size', type=int, default=8, metavar='N',
                    help='batch size (default: 256)')
parser.add_argument('--num_steps', type=int, default=19, metavar='N',
                    help='maximum number of steps (default: 1000000)')
parser.add_argument('--hidden_size', type=int, default=32, metavar='N',
                    help='hidden size (default: 256)')
parser.add_argument('--updates_per_step', type=int, default=1, metavar='N',
                    help='model updates per simulator step (default: 1)')
parser.add_argument('--start_steps', type=int, default=20, metavar='N',
                    help='Steps sampling random actions (default: 10000)')
parser.add_argument('--target_update_interval', type=int, default=1, metavar='N',
                    help='Value target update per no. of updates per step (default: 1)')
parser.add_argument('--replay_size', type=int, default=1000000, metavar='N',
                    help='size of replay buffer (default: 10000000)')
parser.add_argument('--cuda', action="store_true",
                    help='run on CUDA (default: False)')
args = parser.parse_args()

# Environment
# env = NormalizedActions(gym.make(args.env_name))
env = gym.make(args.env_name)
env.seed(args.seed)
env.action_space.seed(args.seed)

torch.manual_seed(args.seed)
np.random.seed(args.seed)

# Agent
agent = SAC(env.observation_space.shape[0], env.action_space, args)

#Tesnorboard
writer = SummaryWriter('runs/{}_SAC_{}_{}_{}'.format(datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S"), args.env_name,
                                                             args.policy, "autotune" if args.automatic_entropy_tuning else ""))

# Memory
memory = ReplayMemory(args.replay_size, args.seed)

# Training Loop
total_numsteps = 0
updates = 0

for i_episode in itertools.count(1):
    episode_reward = 0
    episode_steps = 0
    done = False
    state = env.reset()

    while not done:
        if args.start_steps > total_numsteps:
            action = env.action_space.sample()  # Sample random action
        else:
            action = agent.select_action(state)  # Sample action from policy

        if len(memory) > args.batch_size:
            # Number of updates per step in environment
            for i in range(args.updates_per_step):
                # Update parameters of all the networks
                critic_1_loss, critic_2_loss, policy_loss, ent_loss, alpha = agent.update_parameters(memory, args.batch_size, updates)

                writer.add_scalar('loss/critic_1', critic_1_loss, updates)
                writer.add_scalar('loss/critic_2', critic_2_loss, updates)
                writer.add_scalar('loss/policy', policy_loss, updates)
                writer.add_scalar('loss/entropy_loss', ent_loss, updates)
                writer.add_scalar('entropy_temprature/alpha', alpha, updates)
                updates += 1

        next_state, reward, done, _ = env.step(action) # Step
        episode_steps += 1
        total_numsteps += 1
        episode_reward += reward

        # Ignore the "done" signal if it comes from hitting the time horizon.
        # (https://github.com/openai/spinningup/blob/master/spinup/algos/sac/sac.py)
        mask = 1 if episode_steps == env._max_episode_steps else float(not done)

        memory.push(state, action, reward, next_state, mask) # Append transition to memory

        state = next_state

    if total_numsteps > args.num_steps:
        break

    writer.add_scalar('reward/train', episode_reward, i_episode)
    print("Episode: {}, total numsteps: {}, episode steps: {}, reward: {}".format(i_episode, total_numsteps, episode_steps, round(episode_reward, 2)))

    if i_episode % 10 == 0 and args.eval is True:
        avg_reward = 0.
        episodes = 10
        for _  in range(episodes):
            state = env.reset()
            episode_reward = 0
            done = False
            while not done:
                action = agent.select_action(state, evaluate=True)

                next_state, reward, done, _ = env.step(action)
                episode_reward += reward


                state = next_state
            avg_reward += episode_reward
        avg_reward /= episodes


        writer.add_scalar('avg_reward/test', avg_reward, i_episode)

        print("----------------------------------------")
        print("Test Episodes: {}, Avg. Reward: {}".format(episodes, round(avg_reward, 2)))
        print("----------------------------------------")

env.close()

