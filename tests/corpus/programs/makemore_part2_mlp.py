# Source: github.com/karpathy/nn-zero-to-hero lectures/makemore/makemore_part2_mlp.ipynb @ 73c3fcc741f0ec104ca850b1fb0df90e7e8d4cde
# Changes: the notebook's code cells as a script (tests/corpus/nb2py.py); names.txt replaced by
#   'emma' and 200 made-up names written first; cells 7-19 (written for the notebook's first 5 words) and 28, 31 (plots) left out; 200000 steps -> 20; 20 samples -> 3.
# names.txt (makemore's 32k names) is not in this repository: 200 made-up names stand in for it,
# the first one 'emma' as in names.txt (the notebook's first examples are its 5 bigrams).
import random as _random
_rng = _random.Random(1234)
with open('names.txt', 'w') as _f:
  _f.write('emma\n' + '\n'.join(''.join(_rng.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(_rng.randint(3, 8))) for _ in range(200)))

# cell 0
import torch
import torch.nn.functional as F

# cell 1
# read in all the words
words = open('names.txt', 'r').read().splitlines()
words[:8]

# cell 2
len(words)

# cell 3
# build the vocabulary of characters and mappings to/from integers
chars = sorted(list(set(''.join(words))))
stoi = {s:i+1 for i,s in enumerate(chars)}
stoi['.'] = 0
itos = {i:s for s,i in stoi.items()}
print(itos)

# cell 4
# build the dataset

block_size = 3 # context length: how many characters do we take to predict the next one?
X, Y = [], []
for w in words:
  
  #print(w)
  context = [0] * block_size
  for ch in w + '.':
    ix = stoi[ch]
    X.append(context)
    Y.append(ix)
    #print(''.join(itos[i] for i in context), '--->', itos[ix])
    context = context[1:] + [ix] # crop and append
  
X = torch.tensor(X)
Y = torch.tensor(Y)

# cell 5
X.shape, X.dtype, Y.shape, Y.dtype

# cell 6
# build the dataset
block_size = 3 # context length: how many characters do we take to predict the next one?

def build_dataset(words):  
  X, Y = [], []
  for w in words:

    #print(w)
    context = [0] * block_size
    for ch in w + '.':
      ix = stoi[ch]
      X.append(context)
      Y.append(ix)
      #print(''.join(itos[i] for i in context), '--->', itos[ix])
      context = context[1:] + [ix] # crop and append

  X = torch.tensor(X)
  Y = torch.tensor(Y)
  print(X.shape, Y.shape)
  return X, Y

import random
random.seed(42)
random.shuffle(words)
n1 = int(0.8*len(words))
n2 = int(0.9*len(words))

Xtr, Ytr = build_dataset(words[:n1])
Xdev, Ydev = build_dataset(words[n1:n2])
Xte, Yte = build_dataset(words[n2:])

# cell 20
# ------------ now made respectable :) ---------------

# cell 21
Xtr.shape, Ytr.shape # dataset

# cell 22
g = torch.Generator().manual_seed(2147483647) # for reproducibility
C = torch.randn((27, 10), generator=g)
W1 = torch.randn((30, 200), generator=g)
b1 = torch.randn(200, generator=g)
W2 = torch.randn((200, 27), generator=g)
b2 = torch.randn(27, generator=g)
parameters = [C, W1, b1, W2, b2]

# cell 23
sum(p.nelement() for p in parameters) # number of parameters in total

# cell 24
for p in parameters:
  p.requires_grad = True

# cell 25
lre = torch.linspace(-3, 0, 1000)
lrs = 10**lre

# cell 26
lri = []
lossi = []
stepi = []

# cell 27
for i in range(20):
  
  # minibatch construct
  ix = torch.randint(0, Xtr.shape[0], (32,))
  
  # forward pass
  emb = C[Xtr[ix]] # (32, 3, 10)
  h = torch.tanh(emb.view(-1, 30) @ W1 + b1) # (32, 200)
  logits = h @ W2 + b2 # (32, 27)
  loss = F.cross_entropy(logits, Ytr[ix])
  #print(loss.item())
  
  # backward pass
  for p in parameters:
    p.grad = None
  loss.backward()
  
  # update
  #lr = lrs[i]
  lr = 0.1 if i < 100000 else 0.01
  for p in parameters:
    p.data += -lr * p.grad

  # track stats
  #lri.append(lre[i])
  stepi.append(i)
  lossi.append(loss.log10().item())

#print(loss.item())

# cell 29
emb = C[Xtr] # (32, 3, 2)
h = torch.tanh(emb.view(-1, 30) @ W1 + b1) # (32, 100)
logits = h @ W2 + b2 # (32, 27)
loss = F.cross_entropy(logits, Ytr)
loss

# cell 30
emb = C[Xdev] # (32, 3, 2)
h = torch.tanh(emb.view(-1, 30) @ W1 + b1) # (32, 100)
logits = h @ W2 + b2 # (32, 27)
loss = F.cross_entropy(logits, Ydev)
loss

# cell 32
# training split, dev/validation split, test split
# 80%, 10%, 10%

# cell 33
context = [0] * block_size
C[torch.tensor([context])].shape

# cell 34


# sample from the model
g = torch.Generator().manual_seed(2147483647 + 10)

for _ in range(3):
    
    out = []
    context = [0] * block_size # initialize with all ...
    while True:
      emb = C[torch.tensor([context])] # (1,block_size,d)
      h = torch.tanh(emb.view(1, -1) @ W1 + b1)
      logits = h @ W2 + b2
      probs = F.softmax(logits, dim=1)
      ix = torch.multinomial(probs, num_samples=1, generator=g).item()
      context = context[1:] + [ix]
      out.append(ix)
      if ix == 0:
        break
    
    print(''.join(itos[i] for i in out))

# cell 35

