"""Test plugin: tells torchvision the MD5 sums of the MNIST files our loopback mirror serves
(re-compressed copies of the originals, whose archive checksums differ from the official ones).
Loaded in every rank through DDPX_PLUGINS; the sums come from DDPX_TEST_MNIST_MD5S."""

import json
import os

from torchvision.datasets import MNIST

MNIST.resources = [(name, md5) for name, md5 in json.loads(os.environ["DDPX_TEST_MNIST_MD5S"]).items()]
