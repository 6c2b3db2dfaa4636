"""An example ddpx model plugin: ``smiles_cnn``, a convolutional network over SMILES tokens."""
