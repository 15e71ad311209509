"""Do the paired tests hold their level, and how much can they detect (simulations; README.md)."""
