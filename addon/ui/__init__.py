"""What every feature's interface shares: the object's settings (generated from the
process descriptors), each process's extra widgets, the preset menu, panel bases and
the operators' one error boundary."""
