"""Allow ``python -m gpudra``."""

from gpudra.cli import main

if __name__ == "__main__":
    main()
