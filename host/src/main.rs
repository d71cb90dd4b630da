fn main() {
    print!("{}", oxtile::PTX_SM90A);
}
