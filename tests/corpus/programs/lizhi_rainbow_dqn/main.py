# Source: github.com/Lizhi-sjtu/DRL-code-pytorch 3.Rainbow_DQN/Rainbow_DQN_main.py (and network.py,
#   rainbow_dqn.py, replay_buffer.py, sum_tree.py, unchanged) @ 8f767b99ad44990b49f6acf3159660c5594db77e
# Changes: gym replaced by the CartPole-v1 stand-in of lizhi_ppo_discrete (gym's old API, its
#   dynamics, episodes cut at 20 steps), and env_index 1 (LunarLander, Box2D) -> 0 (CartPole-v1);
#   TensorBoard's SummaryWriter by a stand-in that drops the scalars; the saved rewards (np.save,
#   an output file) dropped; one seed (not 0, 10, 100); defaults: max_train_steps 4e5 -> 40,
#   evaluate_freq 1e3 -> 20, evaluate_times 3 -> 1, buffer_capacity 1e5 -> 1000, batch_size 256 -> 8,
#   hidden_dim 256 -> 16.
import torch
import numpy as np
import numpy as _np


class _Box:
    def __init__(self, shape):
        self.shape = shape


class _Discrete:
    def __init__(self, n):
        self.n = n
        self._rng = _np.random.RandomState(0)

    def seed(self, seed):
        self._rng = _np.random.RandomState(seed)

    def sample(self):
        return int(self._rng.randint(self.n))


class _FakeCartPole:
    """Stands in for gym's CartPole-v1 with gym's old API (gym is not installed): the same state,
    spaces, dynamics and termination, episodes cut at 20 steps."""

    _max_episode_steps = 20

    def __init__(self):
        self.observation_space = _Box((4,))
        self.action_space = _Discrete(2)
        self._rng = _np.random.RandomState(0)

    def seed(self, seed):
        self._rng = _np.random.RandomState(seed)

    def reset(self):
        self.state = self._rng.uniform(-0.05, 0.05, size=(4,)).astype(_np.float32)
        self.steps = 0
        return self.state.copy()

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
        done = bool(abs(x) > 2.4 or abs(theta) > 0.2095) or self.steps >= self._max_episode_steps
        return self.state.copy(), 1.0, done, {}


class gym:  # named as the module it stands in for, so that the program below reads as written
    @staticmethod
    def make(name):
        return _FakeCartPole()


class SummaryWriter:
    """Stands in for TensorBoard's writer: the scalars are dropped (no log files)."""

    def __init__(self, log_dir=None):
        pass

    def add_scalar(self, tag, value, global_step=None):
        pass
import argparse


from replay_buffer import *
from rainbow_dqn import DQN
import argparse


class Runner:
    def __init__(self, args, env_name, number, seed):
        self.args = args
        self.env_name = env_name
        self.number = number
        self.seed = seed

        self.env = gym.make(env_name)
        self.env_evaluate = gym.make(env_name)  # When evaluating the policy, we need to rebuild an environment
        self.env.seed(seed)
        self.env.action_space.seed(seed)
        self.env_evaluate.seed(seed)
        self.env_evaluate.action_space.seed(seed)
        np.random.seed(seed)
        torch.manual_seed(seed)

        self.args.state_dim = self.env.observation_space.shape[0]
        self.args.action_dim = self.env.action_space.n
        self.args.episode_limit = self.env._max_episode_steps  # Maximum number of steps per episode
        print("env={}".format(self.env_name))
        print("state_dim={}".format(self.args.state_dim))
        print("action_dim={}".format(self.args.action_dim))
        print("episode_limit={}".format(self.args.episode_limit))

        if args.use_per and args.use_n_steps:
            self.replay_buffer = N_Steps_Prioritized_ReplayBuffer(args)
        elif args.use_per:
            self.replay_buffer = Prioritized_ReplayBuffer(args)
        elif args.use_n_steps:
            self.replay_buffer = N_Steps_ReplayBuffer(args)
        else:
            self.replay_buffer = ReplayBuffer(args)
        self.agent = DQN(args)

        self.algorithm = 'DQN'
        if args.use_double and args.use_dueling and args.use_noisy and args.use_per and args.use_n_steps:
            self.algorithm = 'Rainbow_' + self.algorithm
        else:
            if args.use_double:
                self.algorithm += '_Double'
            if args.use_dueling:
                self.algorithm += '_Dueling'
            if args.use_noisy:
                self.algorithm += '_Noisy'
            if args.use_per:
                self.algorithm += '_PER'
            if args.use_n_steps:
                self.algorithm += "_N_steps"

        self.writer = SummaryWriter(log_dir='runs/DQN/{}_env_{}_number_{}_seed_{}'.format(self.algorithm, env_name, number, seed))

        self.evaluate_num = 0  # Record the number of evaluations
        self.evaluate_rewards = []  # Record the rewards during the evaluating
        self.total_steps = 0  # Record the total steps during the training
        if args.use_noisy:  # 如果使用Noisy net，就不需要epsilon贪心策略了
            self.epsilon = 0
        else:
            self.epsilon = self.args.epsilon_init
            self.epsilon_min = self.args.epsilon_min
            self.epsilon_decay = (self.args.epsilon_init - self.args.epsilon_min) / self.args.epsilon_decay_steps

    def run(self, ):
        self.evaluate_policy()
        while self.total_steps < self.args.max_train_steps:
            state = self.env.reset()
            done = False
            episode_steps = 0
            while not done:
                action = self.agent.choose_action(state, epsilon=self.epsilon)
                next_state, reward, done, _ = self.env.step(action)
                episode_steps += 1
                self.total_steps += 1

                if not self.args.use_noisy:  # Decay epsilon
                    self.epsilon = self.epsilon - self.epsilon_decay if self.epsilon - self.epsilon_decay > self.epsilon_min else self.epsilon_min

                # When dead or win or reaching the max_episode_steps, done will be Ture, we need to distinguish them;
                # terminal means dead or win,there is no next state s';
                # but when reaching the max_episode_steps,there is a next state s' actually.
                if done and episode_steps != self.args.episode_limit:
                    if self.env_name == 'LunarLander-v2':
                        if reward <= -100: reward = -1  # good for LunarLander
                    terminal = True
                else:
                    terminal = False

                self.replay_buffer.store_transition(state, action, reward, next_state, terminal, done)  # Store the transition
                state = next_state

                if self.replay_buffer.current_size >= self.args.batch_size:
                    self.agent.learn(self.replay_buffer, self.total_steps)

                if self.total_steps % self.args.evaluate_freq == 0:
                    self.evaluate_policy()
        # Save reward

    def evaluate_policy(self, ):
        evaluate_reward = 0
        self.agent.net.eval()
        for _ in range(self.args.evaluate_times):
            state = self.env_evaluate.reset()
            done = False
            episode_reward = 0
            while not done:
                action = self.agent.choose_action(state, epsilon=0)
                next_state, reward, done, _ = self.env_evaluate.step(action)
                episode_reward += reward
                state = next_state
            evaluate_reward += episode_reward
        self.agent.net.train()
        evaluate_reward /= self.args.evaluate_times
        self.evaluate_rewards.append(evaluate_reward)
        print("total_steps:{} \t evaluate_reward:{} \t epsilon：{}".format(self.total_steps, evaluate_reward, self.epsilon))
        self.writer.add_scalar('step_rewards_{}'.format(self.env_name), evaluate_reward, global_step=self.total_steps)


if __name__ == '__main__':
    parser = argparse.ArgumentParser("Hyperparameter Setting for DQN")
    parser.add_argument("--max_train_steps", type=int, default=int(40), help=" Maximum number of training steps")
    parser.add_argument("--evaluate_freq", type=float, default=20, help="Evaluate the policy every 'evaluate_freq' steps")
    parser.add_argument("--evaluate_times", type=float, default=1, help="Evaluate times")

    parser.add_argument("--buffer_capacity", type=int, default=int(1000), help="The maximum replay-buffer capacity ")
    parser.add_argument("--batch_size", type=int, default=8, help="batch size")
    parser.add_argument("--hidden_dim", type=int, default=16, help="The number of neurons in hidden layers of the neural network")
    parser.add_argument("--lr", type=float, default=1e-4, help="Learning rate of actor")
    parser.add_argument("--gamma", type=float, default=0.99, help="Discount factor")
    parser.add_argument("--epsilon_init", type=float, default=0.5, help="Initial epsilon")
    parser.add_argument("--epsilon_min", type=float, default=0.1, help="Minimum epsilon")
    parser.add_argument("--epsilon_decay_steps", type=int, default=int(1e5), help="How many steps before the epsilon decays to the minimum")
    parser.add_argument("--tau", type=float, default=0.005, help="soft update the target network")
    parser.add_argument("--use_soft_update", type=bool, default=True, help="Whether to use soft update")
    parser.add_argument("--target_update_freq", type=int, default=200, help="Update frequency of the target network(hard update)")
    parser.add_argument("--n_steps", type=int, default=5, help="n_steps")
    parser.add_argument("--alpha", type=float, default=0.6, help="PER parameter")
    parser.add_argument("--beta_init", type=float, default=0.4, help="Important sampling parameter in PER")
    parser.add_argument("--use_lr_decay", type=bool, default=True, help="Learning rate Decay")
    parser.add_argument("--grad_clip", type=float, default=10.0, help="Gradient clip")

    parser.add_argument("--use_double", type=bool, default=True, help="Whether to use double Q-learning")
    parser.add_argument("--use_dueling", type=bool, default=True, help="Whether to use dueling network")
    parser.add_argument("--use_noisy", type=bool, default=True, help="Whether to use noisy network")
    parser.add_argument("--use_per", type=bool, default=True, help="Whether to use PER")
    parser.add_argument("--use_n_steps", type=bool, default=True, help="Whether to use n_steps Q-learning")

    args = parser.parse_args()

    env_names = ['CartPole-v1', 'LunarLander-v2']
    env_index = 0
    for seed in [0]:
        runner = Runner(args=args, env_name=env_names[env_index], number=1, seed=seed)
        runner.run()
