from gpulint.cli import program

if __name__ == "__main__":
    program()
