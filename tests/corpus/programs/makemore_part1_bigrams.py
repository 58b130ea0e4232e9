# Source: github.com/karpathy/nn-zero-to-hero lectures/makemore/makemore_part1_bigrams.ipynb @ 73c3fcc741f0ec104ca850b1fb0df90e7e8d4cde
# Changes: the notebook's code cells as a script (tests/corpus/nb2py.py); names.txt replaced by
#   'emma' and 200 made-up names written first; cells 11, 32 (plots) and 17-22 (which use P before the cell that makes it) left out; 5 samples -> 3.
# names.txt (makemore's 32k names) is not in this repository: 200 made-up names stand in for it,
# the first one 'emma' as in names.txt (the notebook's first examples are its 5 bigrams).
import random as _random
_rng = _random.Random(1234)
with open('names.txt', 'w') as _f:
  _f.write('emma\n' + '\n'.join(''.join(_rng.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(_rng.randint(3, 8))) for _ in range(200)))

# cell 0
words = open('names.txt', 'r').read().splitlines()

# cell 1
words[:10]

# cell 2
len(words)

# cell 3
min(len(w) for w in words)

# cell 4
max(len(w) for w in words)

# cell 5
b = {}
for w in words:
  chs = ['<S>'] + list(w) + ['<E>']
  for ch1, ch2 in zip(chs, chs[1:]):
    bigram = (ch1, ch2)
    b[bigram] = b.get(bigram, 0) + 1

# cell 6
sorted(b.items(), key = lambda kv: -kv[1])

# cell 7
import torch

# cell 8
N = torch.zeros((27, 27), dtype=torch.int32)

# cell 9
chars = sorted(list(set(''.join(words))))
stoi = {s:i+1 for i,s in enumerate(chars)}
stoi['.'] = 0
itos = {i:s for s,i in stoi.items()}

# cell 10

for w in words:
  chs = ['.'] + list(w) + ['.']
  for ch1, ch2 in zip(chs, chs[1:]):
    ix1 = stoi[ch1]
    ix2 = stoi[ch2]
    N[ix1, ix2] += 1

# cell 12
N[0]

# cell 13
p = N[0].float()
p = p / p.sum()
p

# cell 14
g = torch.Generator().manual_seed(2147483647)
ix = torch.multinomial(p, num_samples=1, replacement=True, generator=g).item()
itos[ix]

# cell 15
g = torch.Generator().manual_seed(2147483647)
p = torch.rand(3, generator=g)
p = p / p.sum()
p

# cell 16
torch.multinomial(p, num_samples=100, replacement=True, generator=g)

# cell 23
P = (N+1).float()
P /= P.sum(1, keepdims=True)

# cell 24
g = torch.Generator().manual_seed(2147483647)

for i in range(3):
  
  out = []
  ix = 0
  while True:
    p = P[ix]
    ix = torch.multinomial(p, num_samples=1, replacement=True, generator=g).item()
    out.append(itos[ix])
    if ix == 0:
      break
  print(''.join(out))

# cell 25
# GOAL: maximize likelihood of the data w.r.t. model parameters (statistical modeling)
# equivalent to maximizing the log likelihood (because log is monotonic)
# equivalent to minimizing the negative log likelihood
# equivalent to minimizing the average negative log likelihood

# log(a*b*c) = log(a) + log(b) + log(c)

# cell 26
log_likelihood = 0.0
n = 0

for w in words:
#for w in ["andrejq"]:
  chs = ['.'] + list(w) + ['.']
  for ch1, ch2 in zip(chs, chs[1:]):
    ix1 = stoi[ch1]
    ix2 = stoi[ch2]
    prob = P[ix1, ix2]
    logprob = torch.log(prob)
    log_likelihood += logprob
    n += 1
    #print(f'{ch1}{ch2}: {prob:.4f} {logprob:.4f}')

print(f'{log_likelihood=}')
nll = -log_likelihood
print(f'{nll=}')
print(f'{nll/n}')

# cell 27
# create the training set of bigrams (x,y)
xs, ys = [], []

for w in words[:1]:
  chs = ['.'] + list(w) + ['.']
  for ch1, ch2 in zip(chs, chs[1:]):
    ix1 = stoi[ch1]
    ix2 = stoi[ch2]
    print(ch1, ch2)
    xs.append(ix1)
    ys.append(ix2)
    
xs = torch.tensor(xs)
ys = torch.tensor(ys)

# cell 28
xs

# cell 29
ys

# cell 30
import torch.nn.functional as F
xenc = F.one_hot(xs, num_classes=27).float()
xenc

# cell 31
xenc.shape

# cell 33
xenc.dtype

# cell 34
W = torch.randn((27, 1))
xenc @ W

# cell 35
logits = xenc @ W # log-counts
counts = logits.exp() # equivalent N
probs = counts / counts.sum(1, keepdims=True)
probs

# cell 36
probs[0]

# cell 37
probs[0].shape

# cell 38
probs[0].sum()

# cell 39
# (5, 27) @ (27, 27) -> (5, 27)

# cell 40
# SUMMARY ------------------------------>>>>

# cell 41
xs

# cell 42
ys

# cell 43
# randomly initialize 27 neurons' weights. each neuron receives 27 inputs
g = torch.Generator().manual_seed(2147483647)
W = torch.randn((27, 27), generator=g)

# cell 44
xenc = F.one_hot(xs, num_classes=27).float() # input to the network: one-hot encoding
logits = xenc @ W # predict log-counts
counts = logits.exp() # counts, equivalent to N
probs = counts / counts.sum(1, keepdims=True) # probabilities for next character
# btw: the last 2 lines here are together called a 'softmax'

# cell 45
probs.shape

# cell 46

nlls = torch.zeros(5)
for i in range(5):
  # i-th bigram:
  x = xs[i].item() # input character index
  y = ys[i].item() # label character index
  print('--------')
  print(f'bigram example {i+1}: {itos[x]}{itos[y]} (indexes {x},{y})')
  print('input to the neural net:', x)
  print('output probabilities from the neural net:', probs[i])
  print('label (actual next character):', y)
  p = probs[i, y]
  print('probability assigned by the net to the the correct character:', p.item())
  logp = torch.log(p)
  print('log likelihood:', logp.item())
  nll = -logp
  print('negative log likelihood:', nll.item())
  nlls[i] = nll

print('=========')
print('average negative log likelihood, i.e. loss =', nlls.mean().item())

# cell 47
# --------- !!! OPTIMIZATION !!! yay --------------

# cell 48
xs

# cell 49
ys

# cell 50
# randomly initialize 27 neurons' weights. each neuron receives 27 inputs
g = torch.Generator().manual_seed(2147483647)
W = torch.randn((27, 27), generator=g, requires_grad=True)

# cell 51
# forward pass
xenc = F.one_hot(xs, num_classes=27).float() # input to the network: one-hot encoding
logits = xenc @ W # predict log-counts
counts = logits.exp() # counts, equivalent to N
probs = counts / counts.sum(1, keepdims=True) # probabilities for next character
loss = -probs[torch.arange(5), ys].log().mean()

# cell 52
print(loss.item())

# cell 53
# backward pass
W.grad = None # set to zero the gradient
loss.backward()

# cell 54
W.data += -0.1 * W.grad

# cell 55
# --------- !!! OPTIMIZATION !!! yay, but this time actually --------------

# cell 56
# create the dataset
xs, ys = [], []
for w in words:
  chs = ['.'] + list(w) + ['.']
  for ch1, ch2 in zip(chs, chs[1:]):
    ix1 = stoi[ch1]
    ix2 = stoi[ch2]
    xs.append(ix1)
    ys.append(ix2)
xs = torch.tensor(xs)
ys = torch.tensor(ys)
num = xs.nelement()
print('number of examples: ', num)

# initialize the 'network'
g = torch.Generator().manual_seed(2147483647)
W = torch.randn((27, 27), generator=g, requires_grad=True)

# cell 57
# gradient descent
for k in range(1):
  
  # forward pass
  xenc = F.one_hot(xs, num_classes=27).float() # input to the network: one-hot encoding
  logits = xenc @ W # predict log-counts
  counts = logits.exp() # counts, equivalent to N
  probs = counts / counts.sum(1, keepdims=True) # probabilities for next character
  loss = -probs[torch.arange(num), ys].log().mean() + 0.01*(W**2).mean()
  print(loss.item())
  
  # backward pass
  W.grad = None # set to zero the gradient
  loss.backward()
  
  # update
  W.data += -50 * W.grad

# cell 58
# finally, sample from the 'neural net' model
g = torch.Generator().manual_seed(2147483647)

for i in range(3):
  
  out = []
  ix = 0
  while True:
    
    # ----------
    # BEFORE:
    #p = P[ix]
    # ----------
    # NOW:
    xenc = F.one_hot(torch.tensor([ix]), num_classes=27).float()
    logits = xenc @ W # predict log-counts
    counts = logits.exp() # counts, equivalent to N
    p = counts / counts.sum(1, keepdims=True) # probabilities for next character
    # ----------
    
    ix = torch.multinomial(p, num_samples=1, replacement=True, generator=g).item()
    out.append(itos[ix])
    if ix == 0:
      break
  print(''.join(out))

# cell 59

