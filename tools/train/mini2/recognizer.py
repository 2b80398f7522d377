"""The folio-mini-ocr 2 line recognizer: a conv-only CTC reader of one normalised text line.

Input [B, 1, 32, W] (ink in [0, 1], W a multiple of 4), output [B, W/4, classes] logits: one frame
per 4 input columns, class 0 the CTC blank, class k the character lines.CHARSET[k-1].

    conv3x3(1->16) BN ReLU, maxpool 2x2        32 x W    -> 16 x W/2
    conv3x3(16->48) BN ReLU, maxpool 2x2       16 x W/2  -> 8 x W/4
    conv3x3(48->96) BN ReLU, maxpool (2,1)     8 x W/4   -> 4 x W/4
    conv3x3(96->128) BN ReLU                   4 x W/4, flattened to 512 features per frame
    conv1x1(512->256) BN ReLU, 4 x [x + ReLU(BN(conv1d k=3 (256->256)))], conv1x1(256->classes)

No recurrence: BiLSTM backward is many small matrix products, 3x slower on a 2-core CPU, and a
conv stack runs as a few large GEMMs in the C++ engine. Batch norm folds into the convolutions
when the model is exported. About 0.5 MMAC per input column (0.5 GMAC for a 1,000-pixel line).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

from lines import CHARSET


def conv_bn(cin, cout):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class Residual1d(nn.Module):
    def __init__(self, width, k=3):
        super().__init__()
        self.conv = nn.Conv1d(width, width, k, padding=k // 2, bias=False)
        self.bn = nn.BatchNorm1d(width)

    def forward(self, x):
        return x + F.relu(self.bn(self.conv(x)))


class LineRecognizer(nn.Module):
    def __init__(self, width=256, blocks=4):
        super().__init__()
        self.classes = len(CHARSET) + 1
        self.features = nn.Sequential(
            conv_bn(1, 16), nn.MaxPool2d(2),
            conv_bn(16, 48), nn.MaxPool2d(2),
            conv_bn(48, 96), nn.MaxPool2d((2, 1)),
            conv_bn(96, 128))
        self.proj = nn.Sequential(nn.Conv1d(512, width, 1, bias=False), nn.BatchNorm1d(width), nn.ReLU())
        self.blocks = nn.Sequential(*[Residual1d(width) for _ in range(blocks)])
        self.head = nn.Conv1d(width, self.classes, 1)

    def forward(self, x):
        f = self.features(x)                       # [B, 128, 4, W/4]
        f = f.flatten(1, 2)                        # [B, 512, W/4]
        f = self.blocks(self.proj(f))
        return self.head(f).transpose(1, 2)        # [B, W/4, classes]


def greedy_decode(logits, lengths=None):
    """Best-path CTC decoding of [B, T, C] logits -> list of strings."""
    best = logits.argmax(-1).tolist()
    out = []
    for b, seq in enumerate(best):
        n = len(seq) if lengths is None else int(lengths[b])
        s, prev = [], 0
        for k in seq[:n]:
            if k != prev and k != 0:
                s.append(CHARSET[k - 1])
            prev = k
        out.append("".join(s))
    return out
