"""The code that runs experiments on a GPU. Every file here is part of each experiment's source
hash: change one and every result becomes stale until it is measured again."""
