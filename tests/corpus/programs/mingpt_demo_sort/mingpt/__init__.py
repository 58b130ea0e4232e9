# Source: github.com/karpathy/minGPT mingpt/__init__.py @ 37baab71b9abea1b76ab957409a1cc2fbfba8a26
# Changes: none.
